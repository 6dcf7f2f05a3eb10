//! Every line in every language: the sample game's string tables are complete and current, a
//! translation changes text and never structure, the checks catch what a translator can get
//! wrong (one diagnostic each, with the table and the line id), and the typewriter counts every
//! script the way it draws it.

mod content_support;

use std::time::Duration;

use banter_dialogue::canonical;
use banter_dialogue::check;
use banter_dialogue::lines::{LineIndex, source_hash};
use banter_dialogue::locale::{self, Locale, check::check_locales, table};
use banter_dialogue::text::{
    BlipVoice, Pacing, balanced_prefix, localized_voice_clip_path, visible_graphemes,
};
use banter_dialogue::{Problem, Severity};
use content_support::{TempContent, render, sample_content};

fn locale(tag: &str) -> Locale {
    Locale::parse(tag).expect("a valid tag")
}

/// Every `Text` field and greyed-out reason (`Disabled`) removed, recursively: what is left is
/// structure.
fn without_text(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("Text");
            map.remove("Disabled");
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
    for tag in ["ja", "ar"] {
        let (summary, written, text) = export_over(&sample_content(), tag);
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
    let content = sample_copy(tag);
    let file = "locales/ja.po";
    for (from, to) in edits {
        content.edit(file, from, to);
    }
    let path = content.file(file);
    (content, path)
}

/// A copy of the sample content folder, to change.
fn sample_copy(tag: &str) -> TempContent {
    let content = TempContent::empty(tag);
    copy_dir(&sample_content(), &content.root);
    content
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

/// The first entry of the Japanese table: its id, source, translation and source-hash lines as
/// written.
fn first_entry() -> (String, String, String, String) {
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
    (
        find("msgctxt "),
        find("msgid "),
        find("msgstr "),
        find("#. source-hash: "),
    )
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
    let (ctxt, msgid, msgstr, hash) = first_entry();
    let id = ctxt
        .trim_start_matches("msgctxt \"")
        .trim_end_matches('"')
        .to_owned();
    let cases: [PlantedFault; 5] = [
        (
            // Translated from an older text: its recorded hash is that text's.
            "changed-source",
            vec![
                (msgid.clone(), "msgid \"An older text.\"".to_owned()),
                (
                    hash.clone(),
                    format!("#. source-hash: {}", source_hash("An older text.")),
                ),
            ],
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
    let content = sample_copy("line-ids");
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

/// The entry of line `id` in a PO text: its lines from the comments to `msgstr`.
fn entry_block<'a>(po: &'a str, id: &str) -> &'a str {
    po.split("\n\n")
        .find(|block| block.contains(&format!("msgctxt \"{id}\"")))
        .unwrap_or_else(|| panic!("no entry for {id}"))
}

/// The sample's id of node `node` in `dialogue/base/Pim.json`.
fn pim_line(node: &str) -> String {
    let text =
        std::fs::read_to_string(sample_content().join("dialogue/base/Pim.json")).expect("Pim.json");
    let at = text.find(&format!("\"{node}\": {{")).expect("node");
    let rest = &text[at..];
    let start = rest.find("\"LineId\": \"").expect("id") + "\"LineId\": \"".len();
    rest[start..start + rest[start..].find('"').expect("end")].to_owned()
}

/// Exports `tag`'s table of the content in `root` over the one there, without writing it:
/// what export did, the text it writes and the text there now.
fn export_over(root: &std::path::Path, tag: &str) -> (table::ExportSummary, String, String) {
    let (content, _) = check::load_and_check(root);
    let index = LineIndex::new(&content);
    let path = table_path(root, tag);
    let text = std::fs::read_to_string(&path).expect("table");
    let existing = table::read(&path.display().to_string(), locale(tag), &text).expect("reads");
    let (written, summary) = table::export(
        &index,
        &content.locales.settings,
        &locale(tag),
        Some(&existing),
    );
    (summary, written, text)
}

/// Exports `tag`'s table of the content in `root` over the one there, writes it, and returns
/// what export did and the text written.
fn export_in_place(root: &std::path::Path, tag: &str) -> (table::ExportSummary, String) {
    let (summary, written, _) = export_over(root, tag);
    std::fs::write(table_path(root, tag), &written).expect("write the table");
    (summary, written)
}

fn table_path(root: &std::path::Path, tag: &str) -> std::path::PathBuf {
    root.join("locales").join(format!("{tag}.po"))
}

#[test]
fn export_adds_drops_and_marks_a_changed_source_stale_with_what_it_was_made_from() {
    let content = sample_copy("export-stale");
    let pim = "dialogue/base/Pim.json";
    // A response retired and a new one written in its place; Pim's goodbye rewritten.
    content.edit(
        pim,
        r#"{ "LineId": "line:b3641d6909", "Text": "Good luck with the count.", "NextNode": "Pim_Bye" }"#,
        r#"{ "LineId": "line:00000000aa", "Text": "How many so far?", "NextNode": "Pim_Bye" }"#,
    );
    let bye = pim_line("Pim_Bye");
    let (old, new) = ("Bye! Don't step on anybody.", "Bye! Mind the crabs.");
    content.edit(pim, old, new);
    let before = std::fs::read_to_string(content.file("locales/ja.po")).expect("ja.po");
    let translation = entry_block(&before, &bye)
        .lines()
        .find(|l| l.starts_with("msgstr "))
        .expect("translated")
        .to_owned();

    let (summary, written) = export_in_place(&content.root, "ja");
    assert_eq!(
        (summary.added, summary.removed, summary.marked_stale),
        (1, 1, 1),
        "{summary:?}"
    );
    assert!(!written.contains("line:b3641d6909") && written.contains("line:00000000aa"));
    let block = entry_block(&written, &bye);
    assert!(block.contains("\n#, fuzzy\n"), "{block}");
    assert!(block.contains(&format!("msgid \"{new}\"")), "{block}");
    assert!(
        block.contains(&translation),
        "the translation stays: {block}"
    );
    assert!(
        block.contains(&format!("#. source-hash: {}\n", source_hash(old))),
        "the hash of the source it was made from: {block}"
    );
    assert!(
        block.contains(&format!("#. previous-source: {old}\n")),
        "{block}"
    );

    // check-content: the stale entry, one line with the table and the id; nothing else in ja.
    let ja = content.file("locales/ja.po");
    let diagnostics = content.diagnostics();
    let in_ja: Vec<_> = diagnostics.iter().filter(|d| d.file == ja).collect();
    assert_eq!(in_ja.len(), 1, "{}", render(&diagnostics));
    let d = in_ja[0];
    assert!(
        matches!(&d.problem, Problem::StaleTranslation(id) if *id == bye),
        "{d}"
    );
    assert_eq!(d.severity, Severity::Warning);
    let shown = d.to_string();
    assert!(
        !shown.contains('\n') && shown.contains(&ja) && shown.contains(&bye),
        "{shown}"
    );
    // The Arabic table, not exported again, is found stale by its hash alone.
    let ar = content.file("locales/ar.po");
    assert!(
        diagnostics
            .iter()
            .any(|d| d.file == ar
                && matches!(&d.problem, Problem::StaleTranslation(id) if *id == bye)),
        "{}",
        render(&diagnostics)
    );

    // The translator updates the translation and clears fuzzy; the next export records the new
    // source's hash and the warning is gone.
    let reviewed = entry_block(&written, &bye)
        .replace("#, fuzzy\n", "")
        .replace(&translation, "msgstr \"じゃあね！カニに気をつけて。\"");
    std::fs::write(&ja, written.replace(entry_block(&written, &bye), &reviewed)).expect("write");
    let (summary, written) = export_in_place(&content.root, "ja");
    assert_eq!(
        (summary.added, summary.removed, summary.marked_stale),
        (0, 0, 0)
    );
    let block = entry_block(&written, &bye);
    assert!(
        !block.contains("fuzzy") && !block.contains("previous-source"),
        "{block}"
    );
    assert!(
        block.contains(&format!("#. source-hash: {}\n", source_hash(new))),
        "{block}"
    );
    let diagnostics = content.diagnostics();
    assert!(
        diagnostics.iter().all(|d| d.file != ja),
        "{}",
        render(&diagnostics)
    );
}

#[test]
fn an_export_keeps_translators_comments_and_a_limit_set_on_an_entry() {
    let content = sample_copy("export-comments");
    let help = pim_line_response("Need any help?");
    let ja = "locales/ja.po";
    let text = std::fs::read_to_string(content.file(ja)).expect("ja.po");
    let block = entry_block(&text, &help);
    let annotated = format!(
        "# A button: keep it short.\n{}",
        block.replace("#. max-length: 60 (default)", "#. max-length: 6")
    );
    content.edit(ja, block, &annotated);

    // The entry's own limit wins over the settings' 60: its 8 graphemes are too many.
    let diagnostics = content.diagnostics();
    let long: Vec<_> = diagnostics
        .iter()
        .filter(|d| matches!(d.problem, Problem::TranslationTooLong { .. }))
        .collect();
    assert_eq!(long.len(), 1, "{}", render(&diagnostics));
    assert!(matches!(
        long[0].problem,
        Problem::TranslationTooLong {
            length: 8,
            limit: 6
        }
    ));
    assert!(long[0].to_string().contains(&help));

    let (summary, written) = export_in_place(&content.root, "ja");
    assert_eq!(
        (summary.added, summary.removed, summary.marked_stale),
        (0, 0, 0)
    );
    assert_eq!(entry_block(&written, &help), annotated, "kept as written");
    assert_eq!(
        written,
        text.replace(block, &annotated),
        "nothing else moved"
    );
}

/// The sample's id of the response with text `text` in `dialogue/base/Pim.json`.
fn pim_line_response(text: &str) -> String {
    let file =
        std::fs::read_to_string(sample_content().join("dialogue/base/Pim.json")).expect("Pim.json");
    let at = file
        .find(&format!("\"Text\": \"{text}\""))
        .expect("response");
    let start = file[..at].rfind("\"LineId\": \"").expect("id") + "\"LineId\": \"".len();
    file[start..start + file[start..].find('"').expect("end")].to_owned()
}

/// A string table in PO with `entries` of (line id, source, translation), written by hand.
fn hand_written_table(tag: &str, entries: &[(&str, &str, &str)]) -> String {
    let mut po = format!("msgid \"\"\nmsgstr \"\"\n\"Language: {tag}\\n\"\n");
    for (id, source, translation) in entries {
        po.push_str(&format!(
            "\nmsgctxt \"{id}\"\nmsgid \"{source}\"\nmsgstr \"{translation}\"\n"
        ));
    }
    po
}

#[test]
fn pt_br_falls_back_to_pt_then_to_the_source() {
    let content = sample_copy("fallback");
    let (hello, bye, ines) = (
        pim_line("Pim_Hello"),
        pim_line("Pim_Bye"),
        pim_line("Pim_Ines"),
    );
    let (content_loaded, _) = check::load_and_check(&sample_content());
    let pim = &content_loaded.merged["Pim"];
    let source = |node: &str| pim.nodes[node].text.clone();
    content.write(
        "locales/pt-BR.po",
        &hand_written_table(
            "pt-BR",
            &[(&hello, &source("Pim_Hello"), "Psiu! Tô contando ermitões.")],
        ),
    );
    content.write(
        "locales/pt.po",
        &hand_written_table(
            "pt",
            &[
                (
                    &hello,
                    &source("Pim_Hello"),
                    "Chiu! Estou a contar ermitões.",
                ),
                (&bye, &source("Pim_Bye"), "Adeus! Não pises ninguém."),
            ],
        ),
    );
    let (loaded, diagnostics) = content.load();
    assert!(
        diagnostics.iter().all(|d| !d.is_error()),
        "{}",
        render(&diagnostics)
    );
    let pt_br = locale("pt-BR");
    let read = loaded
        .locales
        .localize(&loaded.merged["Pim"], &pt_br)
        .expect("localized");
    assert_eq!(read.nodes["Pim_Hello"].text, "Psiu! Tô contando ermitões.");
    assert_eq!(
        read.nodes["Pim_Bye"].text, "Adeus! Não pises ninguém.",
        "from pt"
    );
    assert_eq!(
        read.nodes["Pim_Ines"].text,
        source("Pim_Ines"),
        "from the source"
    );
    let text = |tag: &str, id: &str, node: &str| {
        loaded
            .locales
            .text(&locale(tag), id, &source(node))
            .map(|t| t.into_owned())
    };
    assert_eq!(
        text("pt-BR", &bye, "Pim_Bye").as_deref(),
        Some("Adeus! Não pises ninguém.")
    );
    assert_eq!(text("pt-BR", &ines, "Pim_Ines"), None);
    assert_eq!(
        text("pt", &hello, "Pim_Hello").as_deref(),
        Some("Chiu! Estou a contar ermitões."),
        "pt alone reads its own"
    );
}

/// A CSV field as RFC 4180 writes it.
fn csv(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

#[test]
fn the_recording_script_gives_the_line_before_and_the_direction_in_the_locale() {
    let (content, _) = check::load_and_check(&sample_content());
    let index = LineIndex::new(&content);
    let (ines, hello_ines) = (
        pim_line("Pim_Ines"),
        pim_line_response("Keeper Ines says hello."),
    );
    let line = &index.lines[&ines];
    let direction = "proud, a little breathless, waving at the lighthouse across the water";
    assert_eq!(line.direction.as_deref(), Some(direction));
    assert_eq!(line.previous.as_deref(), Some("Keeper Ines says hello."));
    let ja = &content.locales.tables[&locale("ja")];
    let row_of = |script: &str, id: &str| {
        script
            .lines()
            .find(|r| r.starts_with(&format!("{id},")))
            .map(str::to_owned)
    };
    for tag in ["ja", locale::PSEUDO] {
        let script = locale::recording_script(&index, &content.locales, &locale(tag), false);
        let (text, previous) = if tag == "ja" {
            (
                ja.translation(&ines).expect("translated").to_owned(),
                ja.translation(&hello_ines).expect("translated").to_owned(),
            )
        } else {
            (
                locale::pseudo(&line.text),
                locale::pseudo("Keeper Ines says hello."),
            )
        };
        let expected = [
            ines.clone(),
            "Pim".into(),
            text,
            previous,
            direction.into(),
            tag.into(),
            format!("voice/{tag}/{}.wav", ines.replace(':', "-")),
        ]
        .map(|f| csv(&f))
        .join(",");
        assert_eq!(row_of(&script, &ines), Some(expected), "{tag}");
        assert_eq!(
            row_of(&script, &hello_ines),
            None,
            "the player is not voiced"
        );
    }
    // With the protagonist voiced: responses (after the line they answer) and barks; never a
    // greyed-out reason, which is read on a button and said by nobody.
    let script = locale::recording_script(&index, &content.locales, &locale("ja"), true);
    let greyed = index.lines.values().filter(|l| l.site.disabled).count();
    assert!(greyed > 0, "the sample greys out a response");
    assert_eq!(script.lines().count(), index.lines.len() - greyed + 1);
    let response = row_of(&script, &hello_ines).expect("a response row");
    let hello = ja.translation(&pim_line("Pim_Hello")).expect("translated");
    assert!(
        response.starts_with(&format!("{hello_ines},Player,")) && response.contains(hello),
        "{response}"
    );
    assert!(
        script
            .lines()
            .any(|r| r.starts_with("bark:") && r.contains(",Player (bark),")),
        "barks"
    );
}

#[test]
fn the_pseudo_example_in_the_protocol_is_what_the_code_writes() {
    let protocol = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/PROTOCOL.md"),
    )
    .expect("docs/PROTOCOL.md");
    // "(`<source>` becomes `<pseudo>`)"
    let at = protocol
        .find("` becomes `[")
        .expect("the pseudo-locale's example");
    let source = &protocol[protocol[..at].rfind('`').expect("its source") + 1..at];
    let rest = &protocol[at + "` becomes `".len()..];
    let shown = &rest[..rest.find('`').expect("its end")];
    assert_eq!(locale::pseudo(source), shown);
}

/// The sample's greyed-out response: Wren's "Let's go and listen to the shoals.", whose
/// `Disabled` reason is a line of its own, keyed by its `DisabledLineId`.
fn wren_reason() -> (String, String, String) {
    let text = std::fs::read_to_string(sample_content().join("dialogue/base/Wren.json"))
        .expect("Wren.json");
    let value: serde_json::Value = serde_json::from_str(&text).expect("json");
    let response = value["Wren_Dock"]["Responses"]
        .as_array()
        .expect("responses")
        .iter()
        .find(|r| r.get("Disabled").is_some())
        .expect("a greyed-out response");
    let field = |key: &str| response[key].as_str().expect(key).to_owned();
    (field("DisabledLineId"), field("Disabled"), field("LineId"))
}

#[test]
fn a_greyed_out_reason_is_indexed_extracted_and_translated_like_a_response() {
    let (content, diagnostics) = check::load_and_check(&sample_content());
    assert!(diagnostics.is_empty(), "{}", render(&diagnostics));
    let (id, reason, response_id) = wren_reason();

    // Indexed as a line of its own, at the response, with the response it explains as context.
    let index = LineIndex::new(&content);
    let line = &index.lines[&id];
    assert_eq!(line.text, reason);
    assert!(
        line.site.disabled && line.site.response.is_some(),
        "{line:?}"
    );
    assert_eq!(line.site.field(), "Responses[3].DisabledLineId");
    assert_eq!(line.speaker, banter_dialogue::lines::GREYED_OUT);
    assert_eq!(line.previous_id.as_deref(), Some(response_id.as_str()));

    // Extracted into every table with its comments, and translated there.
    for tag in ["ja", "ar"] {
        let po = std::fs::read_to_string(table_path(&sample_content(), tag)).expect("table");
        let block = entry_block(&po, &id);
        for expected in [
            format!("#. speaker: {}", banter_dialogue::lines::GREYED_OUT),
            "#. node: Wren_Dock (conversation Wren)".to_owned(),
            "#. previous: Let's go and listen to the shoals.".to_owned(),
            "#. max-length: 60 (default)".to_owned(),
            format!("#. source-hash: {}", source_hash(&reason)),
            "#: dialogue/base/Wren.json:Wren_Dock:response 3:disabled".to_owned(),
            format!("msgid \"{reason}\""),
        ] {
            assert!(block.contains(&expected), "{tag}: {expected}\n{block}");
        }
        assert!(
            content.locales.tables[&locale(tag)]
                .translation(&id)
                .is_some(),
            "{tag} translates the reason"
        );
    }

    // Localized where `opened.content` is made: the reason in the locale, nothing else changed.
    let ja = &content.locales.tables[&locale("ja")];
    let merged = &content.merged["Wren"];
    for (tag, expected) in [
        ("ja", ja.translation(&id).expect("translated").to_owned()),
        (locale::PSEUDO, locale::pseudo(&reason)),
    ] {
        let localized = content
            .locales
            .localize(merged, &locale(tag))
            .expect("a table");
        let banter_dialogue::Exit::Responses(responses) = &localized.nodes["Wren_Dock"].exit else {
            panic!("responses");
        };
        let greyed = &responses[2];
        assert_eq!(greyed.disabled.as_deref(), Some(expected.as_str()), "{tag}");
        assert_eq!(greyed.disabled_line.as_deref(), Some(id.as_str()), "{tag}");
        assert_eq!(greyed.conditions.as_deref(), Some("$HeardShoalSong"));
        let json = canonical::to_json(&localized);
        assert!(json.contains(&expected) && !json.contains(&reason), "{tag}");
    }
    // Said by nobody: never in a recording script, even with the player voiced.
    let script = locale::recording_script(&index, &content.locales, &locale("ja"), true);
    assert!(!script.contains(&id), "{script}");
}

#[test]
fn a_greyed_out_reason_without_its_id_or_with_a_taken_one_is_an_error_at_its_place() {
    let (id, _, response_id) = wren_reason();
    let wren = "dialogue/base/Wren.json";

    let missing = sample_copy("reason-missing");
    missing.edit(
        wren,
        &format!(",\n        \"DisabledLineId\": \"{id}\""),
        "",
    );
    let diagnostics = missing.diagnostics();
    let found: Vec<_> = diagnostics
        .iter()
        .filter(|d| matches!(d.problem, Problem::MissingLineId))
        .collect();
    assert_eq!(found.len(), 1, "{}", render(&diagnostics));
    assert_eq!(found[0].node.as_deref(), Some("Wren_Dock"));
    assert_eq!(
        found[0].field.as_deref(),
        Some("Responses[3].DisabledLineId")
    );
    assert_eq!(found[0].file, missing.file(wren));

    // The reason keyed by its response's id: one line id at two places.
    let taken = sample_copy("reason-duplicate");
    taken.edit(
        wren,
        &format!("\"DisabledLineId\": \"{id}\""),
        &format!("\"DisabledLineId\": \"{response_id}\""),
    );
    let diagnostics = taken.diagnostics();
    let found: Vec<_> = diagnostics
        .iter()
        .filter(|d| matches!(&d.problem, Problem::DuplicateLineId { id, .. } if *id == response_id))
        .collect();
    assert_eq!(found.len(), 1, "{}", render(&diagnostics));
    assert_eq!(
        found[0].field.as_deref(),
        Some("Responses[3].DisabledLineId")
    );
}
