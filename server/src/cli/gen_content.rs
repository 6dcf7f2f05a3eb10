//! `gen-content <transcriptions> --out <content>`: the content generator (article section 8).
//!
//! Reads every `*.json` transcription in the folder (one per NPC), and writes in one run each
//! NPC's base conversation (`dialogue/base/<Conversation>.json`), its NPC entry
//! (`world.generated/<npc>.json`) and its quest definitions (`quests.generated/<npc>.json`):
//! one small file each, so none nears the loader's per-file limit however many NPCs there are.
//! The two `*.generated/` folders are the generator's alone: a shard it did not write this run
//! (an NPC no longer transcribed) is removed, and so are the single `world.generated.json` and
//! `quests.generated.json` older generators wrote. The layer folders (side, story, lockout) and
//! the hand-written `world.json` and `quests.json` are never touched. Any problem in any
//! transcription is printed (file, field, message) and nothing is written: exit 1. A missing
//! folder is a usage error: exit 2.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use banter_dialogue::generate;

use super::{EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE};

pub fn run(
    transcriptions: &Path,
    out_dir: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    if !transcriptions.is_dir() {
        writeln!(
            err,
            "error: `{}` is not a folder of transcriptions",
            transcriptions.display()
        )?;
        return Ok(EXIT_USAGE);
    }
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(transcriptions) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
            .collect(),
        Err(e) => {
            writeln!(
                err,
                "error: cannot read `{}`: {e}",
                transcriptions.display()
            )?;
            return Ok(EXIT_USAGE);
        }
    };
    paths.sort();
    if paths.is_empty() {
        writeln!(
            err,
            "error: `{}` holds no `*.json` transcriptions",
            transcriptions.display()
        )?;
        return Ok(EXIT_USAGE);
    }
    let mut files = Vec::new();
    for path in &paths {
        let display = path.display().to_string();
        match std::fs::read(path) {
            Ok(bytes) => files.push((display, bytes)),
            Err(e) => {
                writeln!(err, "error: {display}: cannot read: {e}")?;
                return Ok(EXIT_PROBLEMS);
            }
        }
    }
    let generated = match generate::generate(&files) {
        Ok(generated) => generated,
        Err(errors) => {
            for e in &errors {
                writeln!(err, "error: {e}")?;
            }
            writeln!(
                err,
                "{} {}; nothing written",
                errors.len(),
                if errors.len() == 1 { "error" } else { "errors" }
            )?;
            return Ok(EXIT_PROBLEMS);
        }
    };
    for (relative, text) in &generated {
        let path = out_dir.join(relative);
        if let Some(parent) = path.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            writeln!(err, "error: cannot create `{}`: {e}", parent.display())?;
            return Ok(EXIT_PROBLEMS);
        }
        // Unchanged files are left alone, so their modification times stay honest.
        if std::fs::read(&path).is_ok_and(|old| old == text.as_bytes()) {
            writeln!(out, "unchanged {relative}")?;
            continue;
        }
        if let Err(e) = std::fs::write(&path, text) {
            writeln!(err, "error: cannot write `{}`: {e}", path.display())?;
            return Ok(EXIT_PROBLEMS);
        }
        writeln!(out, "wrote {relative}")?;
    }
    let mut removed = 0;
    for stale in stale_files(out_dir, &generated) {
        let relative = stale
            .strip_prefix(out_dir)
            .map_or_else(|_| stale.display().to_string(), |p| p.display().to_string());
        if let Err(e) = std::fs::remove_file(&stale) {
            writeln!(err, "error: cannot remove `{}`: {e}", stale.display())?;
            return Ok(EXIT_PROBLEMS);
        }
        writeln!(out, "removed {relative}")?;
        removed += 1;
    }
    write!(
        out,
        "{} transcriptions, {} files",
        paths.len(),
        generated.len()
    )?;
    if removed > 0 {
        write!(out, ", {removed} removed")?;
    }
    writeln!(out)?;
    Ok(EXIT_OK)
}

/// What this run did not write and an earlier one did: the older generators' single files, and
/// shards in the generator's own folders for NPCs no longer transcribed. Nothing else in the
/// content folder is the generator's to remove.
fn stale_files(out_dir: &Path, generated: &generate::Generated) -> Vec<PathBuf> {
    let mut stale = Vec::new();
    for legacy in [generate::LEGACY_WORLD_FILE, generate::LEGACY_QUESTS_FILE] {
        let path = out_dir.join(legacy);
        if path.is_file() {
            stale.push(path);
        }
    }
    for dir in [generate::WORLD_DIR, generate::QUESTS_DIR] {
        let Ok(entries) = std::fs::read_dir(out_dir.join(dir)) else {
            continue;
        };
        let mut shards: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
            .filter(|p| {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                name.is_none_or(|n| !generated.contains_key(&format!("{dir}/{n}")))
            })
            .collect();
        shards.sort();
        stale.extend(shards);
    }
    stale
}
