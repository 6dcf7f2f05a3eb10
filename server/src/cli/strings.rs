//! `strings`: the content's lines as translators and studios need them.
//!
//! `strings tag <content>` adds a `LineId` to every line and response that has text and no id,
//! in place, keeping each file's formatting; ids already written are never changed. Run it after
//! writing new lines; `check-content` refuses content with a line that has none.

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use banter_dialogue::lines::{self, Format};

use super::{EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, require_dir};

/// Every conversation file under `dir/dialogue`, in a stable order.
fn dialogue_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut folders = vec![dir.join("dialogue")];
    while let Some(folder) = folders.pop() {
        if !folder.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(&folder)? {
            let path = entry?.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|x| x == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// `strings tag <dir>`.
pub fn tag(dir: &Path, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    if !require_dir(dir, err)? {
        return Ok(EXIT_USAGE);
    }
    let mut texts = Vec::new();
    for path in dialogue_files(dir)? {
        match std::fs::read_to_string(&path) {
            Ok(text) => texts.push((path, text)),
            Err(e) => {
                writeln!(err, "error: cannot read `{}`: {e}", path.display())?;
                return Ok(EXIT_PROBLEMS);
            }
        }
    }
    let format_of = |path: &Path| {
        Format::of(
            &path
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default(),
        )
    };
    // Every id already written anywhere is taken, so a new one never repeats it.
    let mut taken: HashSet<String> = texts
        .iter()
        .flat_map(|(path, text)| lines::ids_in(text, format_of(path)))
        .collect();
    let mut tagged = Vec::new();
    let mut problems = 0;
    for (path, text) in &texts {
        // Relative to the folder, so the ids do not depend on where the folder is.
        let name = path.strip_prefix(dir).unwrap_or(path).display().to_string();
        match lines::tag_file(&name, text, format_of(path), &mut taken) {
            Ok((_, 0)) => {}
            Ok((new_text, added)) => tagged.push((path, new_text, added)),
            Err(e) => {
                writeln!(err, "error: {e}")?;
                problems += 1;
            }
        }
    }
    if problems > 0 {
        writeln!(
            err,
            "{problems} file(s) could not be read as JSON; nothing was written"
        )?;
        return Ok(EXIT_PROBLEMS);
    }
    let mut total = 0;
    for (path, text, added) in &tagged {
        std::fs::write(path, text)?;
        writeln!(out, "{}: {added} line id(s) added", path.display())?;
        total += added;
    }
    writeln!(out, "{total} line id(s) added in {} file(s)", tagged.len())?;
    Ok(EXIT_OK)
}

/// `strings export --locale <tag> <dir>`: writes or updates `<dir>/locales/<tag>.po`. With
/// `--voice` (`voice` is `Some(with_player)`), prints the locale's recording script (CSV)
/// instead and writes nothing: NPC lines, and with `--player` the protagonist's responses and
/// barks too.
pub fn export(
    dir: &Path,
    locale: &str,
    voice: Option<bool>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    use banter_dialogue::locale::{Locale, table};
    if !require_dir(dir, err)? {
        return Ok(EXIT_USAGE);
    }
    let locale = match Locale::parse(locale) {
        Ok(locale) if locale.is_pseudo() && voice.is_none() => {
            writeln!(
                err,
                "error: `{locale}` is the built-in pseudo-locale; it has no table to write"
            )?;
            return Ok(EXIT_USAGE);
        }
        Ok(locale) => locale,
        Err(e) => {
            writeln!(err, "error: {e}")?;
            return Ok(EXIT_USAGE);
        }
    };
    let (content, diagnostics) = banter_dialogue::content::Content::load(dir);
    // A table is written from content that loads; its lines need their ids first.
    let index = banter_dialogue::lines::LineIndex::new(&content);
    let blocking: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.is_error() && !matches!(d.problem, banter_dialogue::Problem::BadTable(_)))
        .collect();
    if !blocking.is_empty() || !index.missing.is_empty() {
        for d in &blocking {
            writeln!(err, "{d}")?;
        }
        if !index.missing.is_empty() {
            writeln!(
                err,
                "error: {} line(s) have no line id; run `banter-server strings tag {}` first",
                index.missing.len(),
                dir.display()
            )?;
        }
        return Ok(EXIT_PROBLEMS);
    }
    if let Some(with_player) = voice {
        let script = banter_dialogue::locale::recording_script(
            &index,
            &content.locales,
            &locale,
            with_player,
        );
        out.write_all(script.as_bytes())?;
        return Ok(EXIT_OK);
    }
    let folder = dir.join(banter_dialogue::locale::FOLDER);
    let path = folder.join(format!("{locale}.po"));
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => match table::read(&path.display().to_string(), locale.clone(), &text) {
            Ok(table) => Some(table),
            Err(e) => {
                writeln!(
                    err,
                    "error: {}: {e}; fix it or move it away, nothing was written",
                    path.display()
                )?;
                return Ok(EXIT_PROBLEMS);
            }
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            writeln!(err, "error: cannot read `{}`: {e}", path.display())?;
            return Ok(EXIT_PROBLEMS);
        }
    };
    let (text, summary) = table::export(
        &index,
        &content.locales.settings,
        &locale,
        existing.as_ref(),
    );
    std::fs::create_dir_all(&folder)?;
    std::fs::write(&path, text)?;
    writeln!(
        out,
        "{}: {} lines ({} new, {} kept, {} marked stale, {} removed)",
        path.display(),
        index.lines.len(),
        summary.added,
        summary.kept,
        summary.marked_stale,
        summary.removed
    )?;
    Ok(EXIT_OK)
}
