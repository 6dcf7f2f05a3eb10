//! Every line in every language: the sample game's string tables are complete and current, a
//! translation changes text and never structure, the checks catch what a translator can get
//! wrong (one diagnostic each, with the table and the line id), and the typewriter counts every
//! script the way it draws it.

mod content_support;

use std::time::Duration;

use banter_dialogue::canonical;
use banter_dialogue::check;
use banter_dialogue::lines::LineIndex;
use banter_dialogue::locale::{self, Locale, check::check_locales, table};
use banter_dialogue::text::{
    BlipVoice, Pacing, balanced_prefix, localized_voice_clip_path, visible_graphemes,
};
use banter_dialogue::{Problem, Severity};
use content_support::{TempContent, render, sample_content};

fn locale(tag: &str) -> Locale {
    Locale::parse(tag).expect("a valid tag")
}

/// Every `Text` field removed, recursively: what is left is structure.
fn without_text(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("Text");
            map.values_mut().for_each(without_text);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(without_text),
        _ => {}
    }
}

#[test]
fn the_sample_is_translated_whole_into_japanese_and_arabic() {
    let (content, diagnostics) = check::load_and_check(&sample_content());
    assert!(diagnostics.is_empty(), "{}", render(&diagnostics));
    let index = LineIndex::new(&content);
    assert!(index.missing.is_empty() && index.duplicates.is_empty());
    assert!(
        index.lines.keys().any(|id| id.starts_with("bark:")),
        "the bark catalog's lines are in the tables too"
    );
    let coverage = check_locales(&content.locales, &index, &mut Vec::new());
    let tags: Vec<&str> = coverage.iter().map(|c| c.locale.as_str()).collect();
    assert_eq!(tags, ["ar", "ja"]);
    for c in &coverage {
        assert_eq!((c.translated, c.stale), (c.total, 0), "{c:?}");
    }
    // One in a non-Latin script, one right to left.
    let ja = &content.locales.tables[&locale("ja")];
    let ar = &content.locales.tables[&locale("ar")];
    let any_in = |t: &table::StringTable, range: std::ops::RangeInclusive<char>| {
        t.entries
            .values()
            .any(|e| e.translation.chars().any(|c| range.contains(&c)))
    };
    assert!(any_in(ja, '\u{3040}'..='\u{30ff}'), "kana");
    assert!(any_in(ar, '\u{0600}'..='\u{06ff}'), "Arabic letters");
    assert!(any_in(ar, '\u{064b}'..='\u{0652}'), "Arabic marks");
}

#[test]
fn the_committed_tables_are_what_export_writes() {
    // A table out of date (a line added, removed or changed since the last export) fails here:
    // run `banter-server strings export --locale <tag> content`.
    let root = sample_content();
    let (content, _) = check::load_and_check(&root);
    let index = LineIndex::new(&content);
    for tag in ["ja", "ar"] {
        let path = root.join("locales").join(format!("{tag}.po"));
        let text = std::fs::read_to_string(&path).expect("table");
        let existing = table::read(&path.display().to_string(), locale(tag), &text).expect("reads");
        let (written, summary) = table::export(
            &index,
            &content.locales.settings,
            &locale(tag),
            Some(&existing),
        );
        assert_eq!(
            (summary.added, summary.removed, summary.marked_stale),
            (0, 0, 0)
        );
        assert!(written == text, "{tag}.po is not what export writes");
    }
}

#[test]
fn a_translation_changes_text_and_nothing_else() {
    let (content, _) = check::load_and_check(&sample_content());
    for tag in ["ja", "ar", locale::PSEUDO, "ja-JP", "pt-BR"] {
        for (name, merged) in &content.merged {
            let Some(localized) = content.locales.localize(merged, &locale(tag)) else {
                assert_eq!(
                    tag, "pt-BR",
                    "only a locale without a table changes nothing"
                );
                continue;
            };
            let (source, translated) = (canonical::to_json(merged), canonical::to_json(&localized));
            assert_ne!(source, translated, "{tag} {name}: the text differs");
            let mut a: serde_json::Value = serde_json::from_str(&source).expect("json");
            let mut b: serde_json::Value = serde_json::from_str(&translated).expect("json");
            without_text(&mut a);
            without_text(&mut b);
            assert_eq!(a, b, "{tag} {name}: the structure is the same");
        }
    }
}

/// The sample with its Japanese table edited: `(from, to)` replaced once.
fn planted(tag: &str, edits: &[(&str, &str)]) -> (TempContent, String) {
    let content = TempContent::empty(tag);
    copy_dir(&sample_content(), &content.root);
    let file = "locales/ja.po";
    for (from, to) in edits {
        content.edit(file, from, to);
    }
    let path = content.file(file);
    (content, path)
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The first entry of the Japanese table: its id, source and translation lines as written.
fn first_entry() -> (String, String, String) {
    let text = std::fs::read_to_string(sample_content().join("locales/ja.po")).expect("table");
    let block = text
        .split("\n\n")
        .nth(1)
        .expect("an entry after the header");
    let find = |prefix: &str| {
        block
            .lines()
            .skip_while(|l| !l.starts_with(prefix))
            .take_while(|l| l.starts_with(prefix) || l.starts_with('"'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    (find("msgctxt "), find("msgid "), find("msgstr "))
}

/// A planted fault: its name, the table edits, the problem expected, and how severe.
type PlantedFault = (
    &'static str,
    Vec<(String, String)>,
    fn(&Problem) -> bool,
    Severity,
);

#[test]
fn planted_faults_are_one_line_each_with_the_table_and_the_line_id() {
    let (ctxt, msgid, msgstr) = first_entry();
    let id = ctxt
        .trim_start_matches("msgctxt \"")
        .trim_end_matches('"')
        .to_owned();
    let cases: [PlantedFault; 5] = [
        (
            "changed-source",
            vec![(msgid.clone(), "msgid \"An older text.\"".to_owned())],
            |p| matches!(p, Problem::StaleTranslation(_)),
            Severity::Warning,
        ),
        (
            "dropped-tag",
            vec![(msgstr.clone(), "msgstr \"<b>太字</b>の台詞\"".to_owned())],
            |p| matches!(p, Problem::TranslationTags { .. }),
            Severity::Error,
        ),
        (
            "placeholder",
            vec![(msgstr.clone(), "msgstr \"{name}さん\"".to_owned())],
            |p| matches!(p, Problem::TranslationPlaceholders { .. }),
            Severity::Error,
        ),
        (
            "overlong",
            vec![(msgstr.clone(), format!("msgstr \"{}\"", "あ".repeat(201)))],
            |p| {
                matches!(
                    p,
                    Problem::TranslationTooLong {
                        length: 201,
                        limit: 200
                    }
                )
            },
            Severity::Error,
        ),
        (
            "unknown-id",
            vec![(ctxt.clone(), "msgctxt \"line:0000000000\"".to_owned())],
            |p| matches!(p, Problem::UnknownLine(_)),
            Severity::Error,
        ),
    ];
    for (name, edits, expected, severity) in cases {
        let edits: Vec<(&str, &str)> = edits
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (content, path) = planted(name, &edits);
        let diagnostics = content.diagnostics();
        let found: Vec<_> = diagnostics
            .iter()
            .filter(|d| expected(&d.problem))
            .collect();
        assert_eq!(found.len(), 1, "{name}: {}", render(&diagnostics));
        let d = found[0];
        assert_eq!(
            (d.file.as_str(), d.severity),
            (path.as_str(), severity),
            "{name}"
        );
        let shown = d.to_string();
        let named = if name == "unknown-id" {
            "line:0000000000"
        } else {
            id.as_str()
        };
        assert!(shown.contains(named), "{name}: {shown}");
        assert_eq!(
            diagnostics.iter().filter(|d| d.is_error()).count(),
            usize::from(severity == Severity::Error),
            "{name}: nothing else: {}",
            render(&diagnostics)
        );
    }
}

#[test]
fn a_duplicate_or_missing_line_id_in_content_is_an_error_at_its_place() {
    let content = TempContent::empty("line-ids");
    copy_dir(&sample_content(), &content.root);
    let pim = "dialogue/base/Pim.json";
    let text = std::fs::read_to_string(content.root.join(pim)).expect("Pim");
    // Copy Pim_Hello's id onto Pim_Bye's, and drop Pim_Ines's.
    let id_of = |node: &str| {
        let at = text.find(&format!("\"{node}\": {{")).expect("node");
        let rest = &text[at..];
        let start = rest.find("\"LineId\": \"").expect("id") + "\"LineId\": \"".len();
        rest[start..start + rest[start..].find('"').expect("end")].to_owned()
    };
    let (hello, ines, bye) = (id_of("Pim_Hello"), id_of("Pim_Ines"), id_of("Pim_Bye"));
    content.edit(pim, &bye, &hello);
    content.edit(pim, &format!("\"LineId\": \"{ines}\",\n"), "");
    let diagnostics = content.diagnostics();
    let duplicate: Vec<_> = diagnostics
        .iter()
        .filter(|d| matches!(&d.problem, Problem::DuplicateLineId { id, .. } if *id == hello))
        .collect();
    assert_eq!(duplicate.len(), 1, "{}", render(&diagnostics));
    let missing: Vec<_> = diagnostics
        .iter()
        .filter(|d| matches!(d.problem, Problem::MissingLineId))
        .collect();
    assert_eq!(missing.len(), 1, "{}", render(&diagnostics));
    assert_eq!(missing[0].node.as_deref(), Some("Pim_Ines"));
    assert_eq!(missing[0].file, content.file(pim));
}

#[test]
fn graphemes_and_typewriter_prefixes_in_several_scripts() {
    for (text, graphemes) in [
        // Japanese: one grapheme per kana or kanji, the full-width mark included.
        ("しーっ！ヤドカリを数えてるの。", 15),
        // Arabic with its vowel marks: a letter and its marks are one grapheme.
        ("مَرْحَبًا", 5),
        // A combining accent, and an accent written as an entity.
        ("e\u{301}te\u{301}", 3),
        ("<b>e&#x301;</b>", 1),
        // Emoji sequences: a ZWJ family, a flag, a skin tone.
        ("👨‍👩‍👧 🇯🇵 👍🏽", 5),
        // Tags draw nothing, in any script.
        ("<color=#f00>赤い</color>魚", 3),
    ] {
        assert_eq!(visible_graphemes(text), graphemes, "{text}");
        for k in 0..=graphemes {
            let prefix = balanced_prefix(text, k);
            assert_eq!(visible_graphemes(&prefix), k, "{text} at {k}: {prefix}");
        }
    }
    // The prefix never splits a letter from its mark.
    assert_eq!(balanced_prefix("مَرْحَبًا", 1), "مَ");
}

#[test]
fn a_line_in_any_locale_types_out_with_its_own_clip() {
    let ja = "しーっ！ヤドカリを数えてるの。";
    let clip = Duration::from_millis(2350);
    let blips = BlipVoice {
        interval: Duration::from_millis(30),
        base_pitch: 1.0,
        pitch_spread: 0.1,
    };
    let pacing = Pacing::new(Some(clip), blips);
    let total = visible_graphemes(ja);
    assert_eq!(
        pacing.offset(total, total),
        clip,
        "the last grapheme lands on the clip's end"
    );
    assert!(pacing.offset(total / 2, total) < clip);
    assert_eq!(
        localized_voice_clip_path("ja", "line:3f9a0c11d2").as_deref(),
        Ok("voice/ja/line-3f9a0c11d2.wav")
    );
    assert!(localized_voice_clip_path("..", "line:1").is_err());
    assert!(localized_voice_clip_path("ja", "../x").is_err());
}

#[test]
fn the_recording_script_has_a_row_per_npc_line_in_the_locale() {
    let (content, _) = check::load_and_check(&sample_content());
    let index = LineIndex::new(&content);
    let script = locale::recording_script(&index, &content.locales, &locale("ja"), false);
    let mut rows = script.lines();
    assert_eq!(
        rows.next(),
        Some("line_id,speaker,text,previous_line,direction,locale,clip")
    );
    let npc_lines = index
        .lines
        .values()
        .filter(|l| l.site.response.is_none() && !l.id.starts_with("bark:"))
        .count();
    let rows: Vec<&str> = rows.collect();
    assert_eq!(rows.len(), npc_lines);
    assert!(
        rows.iter().all(|r| r.contains(",ja,voice/ja/line-")),
        "{}",
        rows[0]
    );
    assert!(rows.iter().any(|r| r.contains("ヤドカリ")), "Japanese text");
}
