//! The checks a translator cannot slip past, one diagnostic per problem with the table's file
//! and the line id:
//!
//! - **unknown ids**: an entry for a line the content does not have (error: the table is out of
//!   date or for other content);
//! - **tags**: the translation's rich-text tags differ from the source's (error: a dropped `</b>`
//!   breaks the renderer);
//! - **placeholders**: its `{placeholders}` differ (error: the game fills them by name);
//! - **length**: more visible graphemes than the line's limit, counted as the typewriter counts
//!   (error);
//! - **stale**: marked `fuzzy`, or its recorded `source-hash` is not the hash of the line's
//!   source now (warning: it is still served);
//! - **coverage**: translated / total, per locale ([`Coverage`]), printed by `check-content`.

use std::collections::BTreeMap;

use super::Locales;
use super::table::max_length_of;
use crate::diagnostic::{Diagnostic, Problem};
use crate::lines::LineIndex;
use crate::text::{tags, visible_graphemes};

/// How much of the content a locale translates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coverage {
    pub locale: String,
    pub file: String,
    /// Lines with a translation (stale ones included).
    pub translated: usize,
    /// Lines in the content.
    pub total: usize,
    pub stale: usize,
}

impl Coverage {
    /// Translated lines as a whole percentage, rounded down (100 only when complete).
    pub fn percent(&self) -> usize {
        (self.translated * 100)
            .checked_div(self.total)
            .unwrap_or(100)
    }
}

/// Checks every table against the content's lines. Returns each locale's coverage.
pub fn check_locales(
    locales: &Locales,
    index: &LineIndex,
    out: &mut Vec<Diagnostic>,
) -> Vec<Coverage> {
    let mut coverage = Vec::new();
    for table in locales.tables.values() {
        let mut report = Coverage {
            locale: table.locale.to_string(),
            file: table.file.clone(),
            translated: 0,
            total: index.lines.len(),
            stale: 0,
        };
        let at = |id: &str, problem: Problem| {
            Diagnostic::error(&table.file, problem).field(format!("msgctxt {id}"))
        };
        for (id, entry) in &table.entries {
            let Some(line) = index.lines.get(id) else {
                out.push(at(id, Problem::UnknownLine(id.clone())));
                continue;
            };
            if entry.translation.is_empty() {
                continue;
            }
            report.translated += 1;
            if entry.is_stale(&line.text) {
                report.stale += 1;
                let mut d = at(id, Problem::StaleTranslation(id.clone()));
                d.severity = crate::diagnostic::Severity::Warning;
                out.push(d);
            }
            let (source_tags, translated_tags) =
                (sorted(tags(&line.text)), sorted(tags(&entry.translation)));
            if source_tags != translated_tags {
                out.push(at(
                    id,
                    Problem::TranslationTags {
                        original: source_tags.join(" "),
                        translation: translated_tags.join(" "),
                    },
                ));
            }
            let (source_holes, translated_holes) =
                (placeholders(&line.text), placeholders(&entry.translation));
            if source_holes != translated_holes {
                out.push(at(
                    id,
                    Problem::TranslationPlaceholders {
                        original: source_holes.keys().cloned().collect::<Vec<_>>().join(" "),
                        translation: translated_holes
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(" "),
                    },
                ));
            }
            let limit = entry.max_length.or(max_length_of(line, &locales.settings));
            if let Some(limit) = limit {
                let length = visible_graphemes(&entry.translation);
                if length > limit {
                    out.push(at(id, Problem::TranslationTooLong { length, limit }));
                }
            }
        }
        coverage.push(report);
    }
    coverage
}

fn sorted(mut tags: Vec<&str>) -> Vec<&str> {
    tags.sort_unstable();
    tags
}

/// The `{name}` placeholders of a text, with how often each appears.
pub fn placeholders(text: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find(['}', '{']) {
            Some(close) if after.as_bytes()[close] == b'}' => {
                let name = &after[..close];
                if !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
                {
                    *out.entry(format!("{{{name}}}")).or_insert(0) += 1;
                }
                rest = &after[close + 1..];
            }
            Some(close) => rest = &after[close..],
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_counted_by_name() {
        let found = placeholders("Hi {name}, {name}! {not a hole} {{x}} {a.b}");
        assert_eq!(found.get("{name}"), Some(&2));
        assert_eq!(found.get("{x}"), Some(&1));
        assert_eq!(found.get("{a.b}"), Some(&1));
        assert_eq!(found.len(), 3);
        assert!(placeholders("{ unclosed").is_empty());
    }
}
