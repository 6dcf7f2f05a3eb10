//! `export <conversation> --format dot|mermaid [--content DIR]`: the merged conversation (base and
//! every layer) as a picture on stdout.
//!
//! The picture is printed even when the content has errors, because a picture of broken content
//! is exactly what a writer needs to find the break; the errors go to stderr so a pipe into
//! `dot` stays clean.

use std::io::{self, Write};
use std::path::Path;

use banter_dialogue::content::Content;
use banter_dialogue::export::{self, Format};

use super::{EXIT_OK, EXIT_USAGE};

pub fn run(
    dir: &Path,
    name: &str,
    format: Format,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    if !super::require_dir(dir, err)? {
        return Ok(EXIT_USAGE);
    }
    let (content, diagnostics) = Content::load(dir);
    // A conversation by name, or the one an NPC (by instance id) speaks.
    let conversation = content.conversation(name).or_else(|| {
        content
            .npc(name)
            .and_then(|n| content.conversation(&n.conversation))
    });
    let Some(graph) = conversation else {
        let known: Vec<&str> = content.conversations.keys().map(String::as_str).collect();
        writeln!(
            err,
            "error: no conversation or NPC id `{name}` in `{}` (conversations: {})",
            dir.display(),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )?;
        return Ok(EXIT_USAGE);
    };
    for d in diagnostics.iter().filter(|d| d.is_error()) {
        writeln!(err, "{d}")?;
    }
    out.write_all(export::export(graph, format).as_bytes())?;
    Ok(EXIT_OK)
}
