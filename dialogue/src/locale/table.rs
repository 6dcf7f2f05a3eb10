//! String tables: one gettext PO file per locale, read and written with `polib`.
//!
//! Each entry is one line of the content:
//!
//! ```po
//! # A translator's own note: kept by every export.
//! #. speaker: Pim
//! #. node: Pim_Hello (conversation Pim)
//! #. previous: Bye! Don't step on anybody.
//! #. max-length: 200 (default)
//! #. source-hash: 4f1c2a9e
//! #: dialogue/base/Pim.json:Pim_Hello
//! msgctxt "line:3f9a0c11d2"
//! msgid "Shh! I'm counting hermit crabs."
//! msgstr "しーっ！ヤドカリを数えてるの。"
//! ```
//!
//! `msgctxt` is the line id, `msgid` the line's source text as of the last export, `msgstr` the
//! translation (empty: not translated). `source-hash` is the hash of the source the translation
//! was **made from** ([`source_hash`]): an entry is **stale** when it carries the `fuzzy` flag
//! or when that hash is not the hash of the line's source now. When a line's source changes,
//! [`export`] writes the new source as `msgid`, keeps the translation, sets `fuzzy` (which a
//! translator's tool shows as "needs review") and keeps the old `source-hash`, with the old source
//! as `#. previous-source:`. (gettext writes that as a previous msgid, `#| msgid`; `polib` 0.3
//! neither reads nor writes those, so it is an extracted comment here.) Once a translator
//! updates the translation and clears `fuzzy`, the next export records the new source's hash.
//!
//! The other `#.` comments are context for the translator, rewritten at every export, except a
//! length limit set on one entry by hand (`#. max-length: 40`), which is kept and wins over the
//! settings' limit (written `max-length: 200 (default)`). Translators' comments (`# ...`) are
//! kept too.
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// The line's source text as of the last export (`msgid`).
    pub source: String,
    /// The translation; empty when there is none yet.
    pub translation: String,
    /// Marked for review (`#, fuzzy`).
    pub fuzzy: bool,
    /// The hash of the source the translation was made from (`#. source-hash:`), as written.
    /// `None` (a table written without one): the hash of [`Entry::previous_source`], else of
    /// `msgid`.
    pub source_hash: Option<String>,
    /// The source the translation was made from, when export found the line's source changed
    /// (`#. previous-source:`); kept until the translation is reviewed.
    pub previous_source: Option<String>,
    /// A limit set on this entry by hand, in visible graphemes (`#. max-length: N`): it wins
    /// over the settings' limit. `None` when the entry has the settings' limit (`#. max-length:
    /// N (default)`) or none.
    pub max_length: Option<usize>,
    /// The translator's own comments (`# ...`), one per line, kept by every export.
    pub comments: String,
}

impl Entry {
    /// The hash of the source text the translation was made from.
    pub fn made_from(&self) -> String {
        self.source_hash
            .clone()
            .unwrap_or_else(|| source_hash(self.previous_source.as_deref().unwrap_or(&self.source)))
    }

    /// Whether the translation needs review against the line's `current` source: marked
    /// `fuzzy`, or made from another source than `current`.
    pub fn is_stale(&self, current: &str) -> bool {
        self.fuzzy || self.made_from() != source_hash(current)
    }
}

/// The extracted comments (`#.`) an entry keeps its data in.
const SOURCE_HASH: &str = "source-hash: ";
const PREVIOUS_SOURCE: &str = "previous-source: ";
const MAX_LENGTH: &str = "max-length: ";
/// After a `max-length` that is the settings' limit, not the entry's own.
const DEFAULT_MARK: &str = "(default)";

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
        let comment = |key: &str| {
            message
                .extracted_comments()
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(str::trim)
        };
        // `max-length: N` is the entry's own; `max-length: N (default)` the settings'.
        let max_length = comment(MAX_LENGTH)
            .filter(|v| !v.ends_with(DEFAULT_MARK))
            .and_then(|n| n.parse().ok());
        let entry = Entry {
            source: message.msgid().to_owned(),
            translation: message.msgstr().unwrap_or_default().to_owned(),
            fuzzy: message.is_fuzzy(),
            source_hash: comment(SOURCE_HASH)
                .filter(|h| !h.is_empty())
                .map(str::to_ascii_lowercase),
            previous_source: comment(PREVIOUS_SOURCE).map(str::to_owned),
            max_length,
            comments: message.translator_comments().to_owned(),
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

/// The limit a line is held to, from the settings, by kind: a response's, for its text and its
/// greyed-out reason alike (both are shown on its button).
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

/// What an entry becomes at an export: its translation, whether it is marked for review, the
/// hash of the source it was made from, and that source when it is no longer the line's.
struct Exported {
    translation: String,
    fuzzy: bool,
    made_from: String,
    previous_source: Option<String>,
}

impl Exported {
    /// Current: made from the line's source as it is.
    fn current(translation: String, line: &Line) -> Exported {
        Exported {
            translation,
            fuzzy: false,
            made_from: source_hash(&line.text),
            previous_source: None,
        }
    }
}

/// The rules of [`export`] for a line that has an entry. Returns the entry as written and
/// whether this export marked it stale.
fn carry_over(entry: &Entry, line: &Line) -> (Exported, bool) {
    let translation = entry.translation.clone();
    if translation.is_empty() {
        return (Exported::current(translation, line), false);
    }
    let made_from = entry.made_from();
    let unchanged = made_from == source_hash(&line.text);
    if entry.fuzzy {
        // Marked by an earlier export and the source is back to what was translated: current
        // again. Marked by a translator (no previous source): theirs to clear.
        if entry.previous_source.is_some() && unchanged {
            return (Exported::current(translation, line), false);
        }
        // Still awaiting review: the hash and the previous source stay those of the source the
        // translation was made from, however often the line changed since.
        let previous_source = entry
            .previous_source
            .clone()
            .or_else(|| (entry.source != line.text).then(|| entry.source.clone()));
        let exported = Exported {
            translation,
            fuzzy: true,
            made_from,
            previous_source,
        };
        return (exported, false);
    }
    if entry.source == line.text || unchanged {
        // The source as last exported, with `fuzzy` cleared (a translator reviewed it), or a
        // translation recorded as made from this very source.
        return (Exported::current(translation, line), false);
    }
    // The source changed since the translation was made: keep it, mark it for review, and
    // keep what it was made from.
    let exported = Exported {
        translation,
        fuzzy: true,
        made_from,
        previous_source: Some(entry.source.clone()),
    };
    (exported, true)
}

/// Writes (or updates) the string table of `locale` for every line in `index`: new lines added
/// untranslated, removed lines dropped, translations of a changed source kept and marked
/// `fuzzy` with the hash and text of the source they were made from. Translators' comments and
/// a limit set on an entry by hand are kept. Entries come in the content's order (file, node,
/// response), as a translator reads.
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
        let exported = match previous {
            None => {
                summary.added += 1;
                Exported::current(String::new(), line)
            }
            Some(entry) => {
                summary.kept += 1;
                let (exported, marked) = carry_over(entry, line);
                summary.marked_stale += usize::from(marked);
                exported
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
        let default = max_length_of(line, settings);
        // The entry's own limit; one equal to the settings' is theirs (a table written before
        // the two were told apart).
        let own = previous
            .and_then(|e| e.max_length)
            .filter(|n| Some(*n) != default);
        match (own, default) {
            (Some(max), _) => {
                let _ = writeln!(comments, "{MAX_LENGTH}{max}");
            }
            (None, Some(max)) => {
                let _ = writeln!(comments, "{MAX_LENGTH}{max} {DEFAULT_MARK}");
            }
            (None, None) => {}
        }
        let _ = write!(comments, "{SOURCE_HASH}{}", exported.made_from);
        if let Some(source) = &exported.previous_source {
            let _ = write!(comments, "\n{PREVIOUS_SOURCE}{}", one_line(source));
        }
        let mut flags = MessageFlags::new();
        if exported.fuzzy {
            flags.add_flag("fuzzy");
        }
        let source = line.site.reference();
        catalog.append_or_update(
            Message::build_singular()
                .with_translator_comments(previous.map(|e| e.comments.clone()).unwrap_or_default())
                .with_extracted_comments(comments)
                .with_source(source)
                .with_flags(flags)
                .with_msgctxt(line.id.clone())
                .with_msgid(line.text.clone())
                .with_msgstr(exported.translation)
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

    fn line(id: &str, text: &str, response: Option<usize>) -> Line {
        Line {
            id: id.to_owned(),
            text: text.to_owned(),
            speaker: "Pim".into(),
            site: crate::lines::LineSite {
                file: "dialogue/base/Pim.json".into(),
                node: "Pim_Hello".into(),
                response,
                disabled: false,
            },
            conversation: "Pim".into(),
            previous: None,
            previous_id: None,
            direction: None,
        }
    }

    fn index(lines: &[Line]) -> LineIndex {
        LineIndex {
            lines: lines.iter().map(|l| (l.id.clone(), l.clone())).collect(),
            ..LineIndex::default()
        }
    }

    /// Exports `lines` over `table` and reads the result back.
    fn export_over(
        lines: &[Line],
        settings: &LocaleSettings,
        table: Option<&StringTable>,
    ) -> (StringTable, ExportSummary, String) {
        let ja = Locale::parse("ja").expect("the test input is valid");
        let (text, summary) = export(&index(lines), settings, &ja, table);
        let read = read("ja.po", ja, &text).expect("export writes what read reads");
        (read, summary, text)
    }

    /// `table` with line `id`'s entry changed by `edit`, as a translator's tool would.
    fn edited(table: &StringTable, id: &str, edit: impl FnOnce(&mut Entry)) -> StringTable {
        let mut table = table.clone();
        if let Some(entry) = table.entries.get_mut(id) {
            edit(entry);
        }
        table
    }

    #[test]
    fn a_changed_source_keeps_what_its_translation_was_made_from_until_it_is_reviewed() {
        let settings = LocaleSettings::default();
        let v1 = line("line:1", "Shh! I'm counting.", None);
        let (fresh, summary, _) = export_over(std::slice::from_ref(&v1), &settings, None);
        assert_eq!((summary.added, summary.marked_stale), (1, 0));
        let translated = edited(&fresh, "line:1", |e| e.translation = "しーっ！".into());
        let entry = &translated.entries["line:1"];
        assert_eq!(entry.source_hash, Some(source_hash(&v1.text)));
        assert!(!entry.is_stale(&v1.text));

        // The writer changes the line: the translation stays, marked fuzzy, made from v1.
        let v2 = line("line:1", "Shh! I'm counting crabs.", None);
        let (stale, summary, text) =
            export_over(std::slice::from_ref(&v2), &settings, Some(&translated));
        assert_eq!((summary.kept, summary.marked_stale), (1, 1));
        let entry = &stale.entries["line:1"];
        assert!(entry.fuzzy && entry.is_stale(&v2.text), "{text}");
        assert_eq!(
            (entry.source.as_str(), entry.translation.as_str()),
            (v2.text.as_str(), "しーっ！")
        );
        assert_eq!(entry.made_from(), source_hash(&v1.text), "{text}");
        assert_eq!(entry.previous_source.as_deref(), Some(v1.text.as_str()));
        assert!(text.contains("#, fuzzy\n"), "{text}");
        assert!(
            text.contains("#. previous-source: Shh! I'm counting.\n"),
            "{text}"
        );

        // Changed again before anyone reviewed it: still made from v1, not counted twice.
        let v3 = line("line:1", "Shh! I'm counting hermit crabs.", None);
        let (still, summary, _) = export_over(std::slice::from_ref(&v3), &settings, Some(&stale));
        assert_eq!(summary.marked_stale, 0);
        let entry = &still.entries["line:1"];
        assert!(entry.fuzzy);
        assert_eq!(entry.made_from(), source_hash(&v1.text));
        assert_eq!(entry.previous_source.as_deref(), Some(v1.text.as_str()));

        // Without a source-hash comment (a table written by hand), the previous source stands.
        let no_hash = edited(&still, "line:1", |e| e.source_hash = None);
        assert_eq!(no_hash.entries["line:1"].made_from(), source_hash(&v1.text));

        // The translator updates it and clears fuzzy: the next export records v3's hash.
        let reviewed = edited(&still, "line:1", |e| {
            e.translation = "しーっ！ヤドカリを数えてるの。".into();
            e.fuzzy = false;
        });
        assert!(
            reviewed.entries["line:1"].is_stale(&v3.text),
            "until exported again"
        );
        let (current, summary, text) =
            export_over(std::slice::from_ref(&v3), &settings, Some(&reviewed));
        assert_eq!(summary.marked_stale, 0);
        let entry = &current.entries["line:1"];
        assert!(!entry.is_stale(&v3.text), "{text}");
        assert_eq!(entry.previous_source, None);
        assert!(!text.contains("previous-source"), "{text}");

        // A source changed back to what was translated: current again, no review needed.
        let (back, _, _) = export_over(std::slice::from_ref(&v1), &settings, Some(&stale));
        let entry = &back.entries["line:1"];
        assert!(!entry.fuzzy && !entry.is_stale(&v1.text), "{entry:?}");
        assert_eq!(entry.previous_source, None);

        // A fuzzy flag a translator set stays theirs to clear.
        let flagged = edited(&current, "line:1", |e| e.fuzzy = true);
        let (kept, _, _) = export_over(std::slice::from_ref(&v3), &settings, Some(&flagged));
        assert!(kept.entries["line:1"].fuzzy);
    }

    #[test]
    fn translators_comments_and_a_limit_set_by_hand_survive_an_export() {
        let mut settings = LocaleSettings::default();
        settings.max_length.line = Some(200);
        settings.max_length.response = Some(60);
        let lines = [
            line("line:1", "Shh! I'm counting.", None),
            line("line:2", "Need any help?", Some(1)),
            line("line:3", "Good luck.", Some(2)),
        ];
        let (fresh, _, text) = export_over(&lines, &settings, None);
        assert!(text.contains("#. max-length: 200 (default)\n"), "{text}");
        assert!(text.contains("#. max-length: 60 (default)\n"), "{text}");
        assert!(
            fresh.entries.values().all(|e| e.max_length.is_none()),
            "the settings' limit is not the entry's own"
        );
        let annotated = edited(&fresh, "line:2", |e| {
            e.comments = "A button: keep it short.\nAsked by Alex.".into();
            e.max_length = Some(12);
        });
        // A table written before defaults were marked: a plain limit equal to the settings'.
        let legacy = edited(&annotated, "line:3", |e| e.max_length = Some(60));
        let (again, _, text) = export_over(&lines, &settings, Some(&legacy));
        assert_eq!(again.entries["line:2"].max_length, Some(12), "{text}");
        assert_eq!(again.entries["line:3"].max_length, None, "{text}");
        assert_eq!(
            again.entries["line:2"].comments,
            "A button: keep it short.\nAsked by Alex."
        );
        assert!(
            text.contains("# A button: keep it short.\n# Asked by Alex.\n#. speaker"),
            "{text}"
        );
        assert!(text.contains("#. max-length: 12\n"), "{text}");
        // The defaults follow the settings; the entry's own limit stays.
        settings.max_length.response = Some(50);
        let (again, _, text) = export_over(&lines, &settings, Some(&again));
        assert_eq!(again.entries["line:2"].max_length, Some(12), "{text}");
        assert_eq!(text.matches("#. max-length: 50 (default)\n").count(), 1);
        // Exported once more, everything is stable.
        let (third, _, text_again) = export_over(&lines, &settings, Some(&again));
        assert_eq!(third, again);
        assert_eq!(text_again, text);
    }

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
