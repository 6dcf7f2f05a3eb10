//! `check-content <dir>`: the loader's diagnostics and the content checks, one line each, then a
//! summary. Exit 1 on any error, 0 on warnings only, so CI can gate on it. The content
//! migrations file is read too (a bad one would refuse the push that brings it). Each locale's
//! string table gets a coverage line (translated / total, stale).

use std::io::{self, Write};
use std::path::Path;

use banter_dialogue::check;

use super::{EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE};

pub fn run(dir: &Path, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    if !super::require_dir(dir, err)? {
        return Ok(EXIT_USAGE);
    }
    let (content, diagnostics) = check::load_and_check(dir);
    for d in &diagnostics {
        writeln!(out, "{d}")?;
    }
    // Coverage per locale (its problems are among the diagnostics above).
    let index = banter_dialogue::lines::LineIndex::new(&content);
    let coverage =
        banter_dialogue::locale::check::check_locales(&content.locales, &index, &mut Vec::new());
    for locale in &coverage {
        writeln!(
            out,
            "locale {}: {}/{} lines translated ({}%), {} stale ({})",
            locale.locale,
            locale.translated,
            locale.total,
            locale.percent(),
            locale.stale,
            locale.file
        )?;
    }
    let migrations = crate::migrations::load(dir);
    if let Err(problem) = &migrations {
        writeln!(out, "error: {problem}")?;
    }
    let content_errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics.len() - content_errors;
    let errors = content_errors + usize::from(migrations.is_err());
    writeln!(
        out,
        "{errors} {}, {warnings} {}",
        plural(errors, "error"),
        plural(warnings, "warning")
    )?;
    Ok(if check::is_clean(&diagnostics) && migrations.is_ok() {
        EXIT_OK
    } else {
        EXIT_PROBLEMS
    })
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}
