//! String tables: one gettext PO file per locale, read and written with `polib`.
//!
//! Each entry is one line of the content:
//!
//! ```po
//! #. speaker: Pim
//! #. node: Pim_Hello (conversation Pim)
//! #. previous: Bye! Don't step on anybody.
//! #. max-length: 60
//! #. source-hash: 4f1c2a9e
//! #: dialogue/base/Pim.json:Pim_Hello
//! msgctxt "line:3f9a0c11d2"
//! msgid "Shh! I'm counting hermit crabs."
//! msgstr "しーっ！ヤドカリを数えてるの。"
//! ```
//!
//! `msgctxt` is the line id, `msgid` the source text the translation was made from, `msgstr` the
//! translation (empty: not translated). The `#.` comments are context for the translator and are
//! rewritten at every export; `source-hash` is the hash of `msgid`
//! ([`source_hash`](crate::lines::source_hash)). An entry is **stale** when it carries the
//! `fuzzy` flag, or when its `msgid` is no longer the line's source: [`export`] then writes the
//! new source as `msgid`, keeps the translation and sets `fuzzy`, which a translator's tool
//! shows as "needs review" and clears once the translation is updated.
//!
//! `polib` slices lines without checking them, so a malformed file could panic it: every line is
//! checked here first ([`read`]), and a bad one is a [`TableError`] with its line number.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use polib::catalog::Catalog;
use polib::message::{Message, MessageFlags};
use polib::metadata::CatalogMetadata;

use super::{Locale, LocaleSettings};
use crate::lines::{Line, LineIndex, source_hash};

/// One translated (or untranslated) line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The source text the translation was made from (`msgid`).
    pub source: String,
    /// The translation; empty when there is none yet.
    pub translation: String,
    /// Marked for review (`#, fuzzy`).
    pub fuzzy: bool,
    /// The visible graphemes the translation may have at most (`#. max-length: N`).
    pub max_length: Option<usize>,
}

/// A locale's string table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StringTable {
    pub locale: Locale,
    /// The file it was read from, for diagnostics.
    pub file: String,
    /// Entries by line id.
    pub entries: BTreeMap<String, Entry>,
}

impl StringTable {
    /// The translation of line `id`, if it has one that is not marked for review. A stale
    /// entry still translates (better an older translation than the source language); the check
    /// reports it.
    pub fn translation(&self, id: &str) -> Option<&str> {
        self.entries
            .get(id)
            .map(|e| e.translation.as_str())
            .filter(|t| !t.is_empty())
    }
}

/// Why a string table could not be read. Each says where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error("line {line}: {reason}")]
    Line { line: usize, reason: String },
    #[error("the file is not valid PO: {0}")]
    Parse(String),
    #[error("an entry has no line id (`msgctxt`): msgid {msgid:?}")]
    NoLineId { msgid: String },
    #[error("line id `{0}` has two entries")]
    DuplicateId(String),
    #[error("plural entries are not used by dialogue lines: line id `{0}`")]
    Plural(String),
}

/// The keywords a PO line may start with, each followed by a quoted string (`msgstr[N]` too).
const KEYWORDS: [&str; 4] = ["msgctxt ", "msgid_plural ", "msgid ", "msgstr "];

/// Checks every line of a PO file the way polib will slice it, so that it never panics.
fn check_lines(text: &str) -> Result<(), TableError> {
    // polib appends a continuation line (`"..."`) or a bare `#` to the field the last keyword or
    // comment opened, and panics when none has been opened yet: one must come first.
    let mut field_open = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let bad = |reason: &str| TableError::Line {
            line: i + 1,
            reason: reason.to_owned(),
        };
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            if ["# ", "#. ", "#: ", "#, "]
                .iter()
                .any(|p| line.starts_with(p))
            {
                field_open = true;
            } else if line == "#" && !field_open {
                return Err(bad("a bare `#` before any entry"));
            }
            continue;
        }
        let quoted = if line.starts_with('"') {
            if !field_open {
                return Err(bad("a string before any msgctxt, msgid or msgstr"));
            }
            line
        } else if let Some(keyword) = KEYWORDS.iter().find(|k| line.starts_with(*k)) {
            &line[keyword.len()..]
        } else if let Some(plural) = line.strip_prefix("msgstr[") {
            // `msgstr[N] "..."`, N one digit.
            match plural.split_once("] ") {
                Some((n, rest)) if n.len() == 1 && n.as_bytes()[0].is_ascii_digit() => rest,
                _ => return Err(bad("expected `msgstr[N] \"...\"`")),
            }
        } else {
            return Err(bad(
                "expected msgctxt, msgid, msgid_plural or msgstr and a string, a string or a comment",
            ));
        };
        field_open = true;
        if quoted.len() < 2 || !quoted.starts_with('"') || !quoted.ends_with('"') {
            return Err(bad("expected a string in double quotes"));
        }
        let inner = &quoted[1..quoted.len() - 1];
        let mut escaped = false;
        for c in inner.chars() {
            match (escaped, c) {
                (true, 'n' | 't' | 'r' | '"' | '\\') => escaped = false,
                (true, _) => return Err(bad("unknown escape after `\\`")),
                (false, '\\') => escaped = true,
                (false, '"') => return Err(bad("a `\"` inside a string must be escaped")),
                (false, _) => {}
            }
        }
        if escaped {
            return Err(bad("a string ends with a lone `\\`"));
        }
    }
    Ok(())
}

/// Reads a string table.
pub fn read(file: &str, locale: Locale, text: &str) -> Result<StringTable, TableError> {
    check_lines(text)?;
    let catalog = polib::po_file::parse_from_reader(text.as_bytes())
        .map_err(|e| TableError::Parse(e.to_string()))?;
    let mut entries = BTreeMap::new();
    for message in catalog.messages() {
        if message.is_plural() {
            return Err(TableError::Plural(
                message.msgctxt().unwrap_or_default().to_owned(),
            ));
        }
        let Some(id) = message.msgctxt().filter(|c| !c.is_empty()) else {
            return Err(TableError::NoLineId {
                msgid: message.msgid().to_owned(),
            });
        };
        let max_length = message
            .extracted_comments()
            .lines()
            .find_map(|l| l.strip_prefix("max-length: "))
            .and_then(|n| n.trim().parse().ok());
        let entry = Entry {
            source: message.msgid().to_owned(),
            translation: message.msgstr().unwrap_or_default().to_owned(),
            fuzzy: message.is_fuzzy(),
            max_length,
        };
        if entries.insert(id.to_owned(), entry).is_some() {
            return Err(TableError::DuplicateId(id.to_owned()));
        }
    }
    Ok(StringTable {
        locale,
        file: file.to_owned(),
        entries,
    })
}

/// The limit a line is held to, from the settings, by kind.
pub fn max_length_of(line: &Line, settings: &LocaleSettings) -> Option<usize> {
    match line.site.response {
        Some(_) => settings.max_length.response,
        None => settings.max_length.line,
    }
}

/// What [`export`] did to a table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportSummary {
    pub added: usize,
    pub removed: usize,
    /// Translated entries whose source changed, now marked `fuzzy`.
    pub marked_stale: usize,
    pub kept: usize,
}

/// Writes (or updates) the string table of `locale` for every line in `index`: new lines added
/// untranslated, removed lines dropped, translations of a changed source kept and marked
/// `fuzzy`. Entries come in the content's order (file, node, response), as a translator reads.
pub fn export(
    index: &LineIndex,
    settings: &LocaleSettings,
    locale: &Locale,
    existing: Option<&StringTable>,
) -> (String, ExportSummary) {
    let mut metadata = CatalogMetadata::new();
    metadata.project_id_version = "banter content".into();
    metadata.language = locale.to_string();
    metadata.mime_version = "1.0".into();
    metadata.content_type = "text/plain; charset=UTF-8".into();
    metadata.content_transfer_encoding = "8bit".into();
    let mut catalog = Catalog::new(metadata);
    let mut summary = ExportSummary::default();
    let mut lines: Vec<&Line> = index.lines.values().collect();
    lines.sort_by(|a, b| a.site.cmp(&b.site).then_with(|| a.id.cmp(&b.id)));
    for line in lines {
        let previous = existing.and_then(|t| t.entries.get(&line.id));
        let (translation, fuzzy) = match previous {
            None => {
                summary.added += 1;
                (String::new(), false)
            }
            Some(entry) if entry.source == line.text => {
                summary.kept += 1;
                (entry.translation.clone(), entry.fuzzy)
            }
            Some(entry) => {
                summary.kept += 1;
                let translated = !entry.translation.is_empty();
                summary.marked_stale += usize::from(translated && !entry.fuzzy);
                (entry.translation.clone(), translated)
            }
        };
        let mut comments = String::new();
        let _ = writeln!(comments, "speaker: {}", line.speaker);
        let _ = writeln!(
            comments,
            "node: {} (conversation {})",
            line.site.node, line.conversation
        );
        if let Some(previous) = &line.previous {
            let _ = writeln!(comments, "previous: {}", one_line(previous));
        }
        if let Some(max) = max_length_of(line, settings) {
            let _ = writeln!(comments, "max-length: {max}");
        }
        let _ = write!(comments, "source-hash: {}", source_hash(&line.text));
        let mut flags = MessageFlags::new();
        if fuzzy {
            flags.add_flag("fuzzy");
        }
        let source = match line.site.response {
            Some(i) => format!("{}:{}:response {i}", line.site.file, line.site.node),
            None => format!("{}:{}", line.site.file, line.site.node),
        };
        catalog.append_or_update(
            Message::build_singular()
                .with_extracted_comments(comments)
                .with_source(source)
                .with_flags(flags)
                .with_msgctxt(line.id.clone())
                .with_msgid(line.text.clone())
                .with_msgstr(translation)
                .done(),
        );
    }
    if let Some(existing) = existing {
        summary.removed = existing
            .entries
            .keys()
            .filter(|id| !index.lines.contains_key(*id))
            .count();
    }
    let mut bytes = Vec::new();
    {
        let mut writer = std::io::BufWriter::new(&mut bytes);
        // Writing to memory cannot fail.
        let _ = polib::po_file::write(&catalog, &mut writer);
    }
    (String::from_utf8_lossy(&bytes).into_owned(), summary)
}

/// A comment stays on one line.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_table_is_a_typed_error_with_its_line_and_never_a_panic() {
        let locale = Locale::parse("ja").expect("the test input is valid");
        for (text, line) in [
            ("msgid \"a\"\nmsgstr \"b", 2),
            ("msgid\n", 1),
            ("\"\n", 1),
            ("msgid é\n", 1),
            ("msgctxt \"x\"\nmsgid \"a\"b\"\nmsgstr \"\"\n", 2),
            ("hello\n", 1),
            ("msgstr[x] \"a\"\n", 1),
            ("msgid \"a\\q\"\n", 1),
            ("\"orphan\"\n", 1),
            ("#\nmsgid \"a\"\n", 1),
        ] {
            match read("ja.po", locale.clone(), text) {
                Err(TableError::Line { line: at, .. }) => assert_eq!(at, line, "{text:?}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
        let header = "msgid \"\"\nmsgstr \"Language: ja\\n\"\n\n";
        let no_id = read(
            "ja.po",
            locale.clone(),
            &format!("{header}msgid \"a\"\nmsgstr \"b\"\n"),
        );
        assert!(
            matches!(no_id, Err(TableError::NoLineId { .. })),
            "{no_id:?}"
        );
        let twice = "msgctxt \"l\"\nmsgid \"a\"\nmsgstr \"b\"\n\nmsgctxt \"l\"\nmsgid \"c\"\nmsgstr \"d\"\n";
        assert_eq!(
            read("ja.po", locale.clone(), &format!("{header}{twice}")),
            Err(TableError::DuplicateId("l".into()))
        );
        // No header: polib's own refusal, typed.
        assert!(matches!(
            read(
                "ja.po",
                locale,
                "msgctxt \"l\"\nmsgid \"a\"\nmsgstr \"b\"\n"
            ),
            Err(TableError::Parse(_))
        ));
    }
}
