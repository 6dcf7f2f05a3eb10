//! Issue 22: generated content in shards (one small file per NPC) that the loader reads beside
//! the hand-written files; every diagnostic naming the file, generated or hand-written, and the
//! index it came from; a missing required file reported as missing, before (and instead of) its
//! consequences; and no empty world.

mod content_support;

use banter_dialogue::check::{self, is_clean};
use banter_dialogue::generate::{
    self, LEGACY_QUESTS_FILE, LEGACY_WORLD_FILE, QUESTS_DIR, WORLD_DIR,
};
use banter_dialogue::{Diagnostic, Problem};
use content_support::{TempContent, expect_error_starting, generate_errors, render};

fn other(fragment: &'static str) -> impl Fn(&Problem) -> bool {
    move |p| matches!(p, Problem::Other(m) if m.contains(fragment))
}

fn errors(diagnostics: &[Diagnostic]) -> Vec<&Diagnostic> {
    diagnostics.iter().filter(|d| d.is_error()).collect()
}

/// A generated NPC `second` (speaking `Talk`, like `keeper`) standing on `island`.
fn generated_npc(id: &str, island: &str) -> String {
    format!(
        r#"{{ "Id": "{id}", "Name": "Second", "Island": "{island}", "Position": [1, 0, 0],
              "Range": 8.0, "Conversation": "Talk" }}"#
    )
}

fn world_of(npcs: &[String]) -> String {
    format!(r#"{{ "Islands": [], "Npcs": [ {} ] }}"#, npcs.join(", "))
}

/// Where the entry with id `wanted` stands in `entries`.
fn index_of<T>(entries: &[T], id: impl Fn(&T) -> &String, wanted: &str) -> usize {
    entries
        .iter()
        .position(|e| id(e) == wanted)
        .unwrap_or_else(|| panic!("no entry `{wanted}`"))
}

/// Writes the world shard of one generated NPC, `id` on `island`; returns the shard's path.
fn write_npc_shard(c: &TempContent, id: &str, island: &str) -> String {
    let shard = format!("{WORLD_DIR}/{id}.json");
    c.write(&shard, &world_of(&[generated_npc(id, island)]));
    shard
}

#[test]
fn an_error_in_the_older_single_generated_world_file_names_that_file_and_its_index() {
    let c = TempContent::minimal("legacy-world");
    c.write(
        LEGACY_WORLD_FILE,
        &world_of(&[
            generated_npc("second", "home"),
            generated_npc("third", "atlantis"),
        ]),
    );
    let diagnostics = c.diagnostics();
    let d = c.expect_file_error(
        &diagnostics,
        LEGACY_WORLD_FILE,
        other("unknown island `atlantis`"),
    );
    assert_eq!(d.field.as_deref(), Some("Npcs[2].Island"), "{d}");
    // Nothing is blamed on the hand-written file.
    assert!(
        diagnostics.iter().all(|d| d.file != c.file("world.json")),
        "{}",
        render(&diagnostics)
    );
}

#[test]
fn an_error_in_a_generated_world_shard_names_that_shard_and_its_index() {
    let c = TempContent::minimal("world-shard");
    let shard = write_npc_shard(&c, "second", "atlantis");
    let diagnostics = c.diagnostics();
    let d = c.expect_file_error(&diagnostics, &shard, other("unknown island `atlantis`"));
    assert_eq!(d.field.as_deref(), Some("Npcs[1].Island"), "{d}");
}

#[test]
fn an_error_in_generated_quests_names_that_file_and_its_index() {
    const QUESTS: &str = r#"[
      { "Id": "Ok", "Giver": "keeper", "Kind": "side",
        "Objectives": [ { "Id": "O", "Kind": "catch", "Target": 1 } ],
        "Nodes": { "Greeting": "Fish_Greet", "Check": "Fish_Check" } },
      { "Id": "Lost", "Giver": "nobody", "Kind": "side",
        "Objectives": [ { "Id": "O", "Kind": "catch", "Target": 1 } ],
        "Nodes": { "Greeting": "G", "Check": "C" } }
    ]"#;
    for relative in [
        LEGACY_QUESTS_FILE.to_owned(),
        format!("{QUESTS_DIR}/keeper.json"),
    ] {
        let c = TempContent::minimal("quests-shard");
        c.write(&relative, QUESTS);
        let diagnostics = c.diagnostics();
        let d = c.expect_file_error(&diagnostics, &relative, other("given by `nobody`"));
        assert_eq!(d.field.as_deref(), Some("[2].Giver"), "{d}");
    }
}

#[test]
fn an_npc_defined_by_hand_and_by_the_generator_names_both_files() {
    let c = TempContent::minimal("duplicate-across");
    let shard = write_npc_shard(&c, "keeper", "home");
    let diagnostics = c.diagnostics();
    let d = c.expect_file_error(&diagnostics, &shard, |p| {
        *p == Problem::Duplicate("keeper".to_owned())
    });
    assert_eq!(d.field.as_deref(), Some("Npcs[1].Id"));
    let line = d.to_string();
    assert!(
        line.contains(&format!(
            "first defined in {} at Npcs[1]",
            c.file("world.json")
        )),
        "{line}"
    );
}

#[test]
fn a_resolver_gap_of_a_generated_npc_is_reported_on_its_shard() {
    let c = TempContent::minimal("resolver-shard");
    c.edit("dialogue/base/Talk.json", r#""AllDone""#, r#""AllGone""#);
    let diagnostics = c.diagnostics();
    let resolver: Vec<&Diagnostic> = diagnostics
        .iter()
        .filter(|d| d.problem.to_string().contains("entry resolver"))
        .collect();
    assert!(!resolver.is_empty(), "{}", render(&diagnostics));
    for d in resolver {
        assert_eq!(d.file, c.file("world.json"), "{d}");
        assert_eq!(d.field.as_deref(), Some("Npcs[1]"), "{d}");
    }
    // The same NPC generated instead of hand-written: the shard is named.
    let c = TempContent::minimal("resolver-shard-2");
    c.write(
        "world.json",
        r#"{ "Islands": [ { "Id": "home", "Name": "Home" } ], "Npcs": [] }"#,
    );
    let shard = write_npc_shard(&c, "keeper", "home");
    c.edit("dialogue/base/Talk.json", r#""AllDone""#, r#""AllGone""#);
    let diagnostics = c.diagnostics();
    let d = diagnostics
        .iter()
        .find(|d| d.problem.to_string().contains("entry resolver"))
        .unwrap_or_else(|| panic!("a resolver error:\n{}", render(&diagnostics)));
    assert_eq!(d.file, c.file(&shard), "{d}");
    assert_eq!(d.field.as_deref(), Some("Npcs[1]"), "{d}");
}

/// Removes file `relative`: the first diagnostic then says it is missing. Returns them all.
fn remove_and_expect_missing_first(c: &TempContent, relative: &str) -> Vec<Diagnostic> {
    std::fs::remove_file(c.root.join(relative)).expect("remove");
    let diagnostics = c.diagnostics();
    let first = diagnostics.first().expect("a diagnostic");
    assert_eq!(first.file, c.file(relative), "{}", render(&diagnostics));
    assert!(
        matches!(first.problem, Problem::MissingFile(_)),
        "{}",
        render(&diagnostics)
    );
    diagnostics
}

#[test]
fn a_missing_world_json_is_reported_missing_first_and_not_as_its_consequences() {
    let c = TempContent::minimal("no-world");
    let diagnostics = remove_and_expect_missing_first(&c, "world.json");
    let first = &diagnostics[0];
    assert!(first.to_string().contains("the file is missing"), "{first}");
    // Its consequences are not reported as causes: no quest "given by an unknown NPC", no
    // objective "on an unknown island", no "world without NPCs".
    for fragment in [
        "unknown island",
        "not an NPC id",
        "has no NPCs",
        "unreachable",
    ] {
        assert!(
            diagnostics
                .iter()
                .all(|d| !d.problem.to_string().contains(fragment)),
            "`{fragment}` is a consequence:\n{}",
            render(&diagnostics)
        );
    }
    assert!(!is_clean(&diagnostics));
}

#[test]
fn a_missing_quests_json_is_reported_missing_first_and_not_as_its_consequences() {
    let c = TempContent::minimal("no-quests");
    let diagnostics = remove_and_expect_missing_first(&c, "quests.json");
    // The conversation's AcceptQuest of `Fish` is not "unknown", and the quest's nodes are not
    // "unreachable": both only repeat that quests.json is missing.
    assert!(
        diagnostics.iter().all(|d| !matches!(
            d.problem,
            Problem::UnknownReference { .. } | Problem::Unreachable
        )),
        "{}",
        render(&diagnostics)
    );
    assert_eq!(errors(&diagnostics).len(), 1, "{}", render(&diagnostics));
}

#[test]
fn a_broken_world_json_is_one_error_without_its_consequences() {
    let c = TempContent::minimal("broken-world");
    c.write("world.json", "{ \"Islands\": [ ");
    let diagnostics = c.diagnostics();
    let errors = errors(&diagnostics);
    assert_eq!(errors.len(), 1, "{}", render(&diagnostics));
    assert_eq!(errors[0].file, c.file("world.json"));
    assert!(
        matches!(errors[0].problem, Problem::Syntax(_)),
        "{}",
        errors[0]
    );
}

#[test]
fn an_empty_folder_is_refused_naming_the_missing_files_first() {
    let c = TempContent::empty("empty-folder");
    let diagnostics = c.diagnostics();
    assert!(!is_clean(&diagnostics));
    let files: Vec<(&str, bool)> = diagnostics
        .iter()
        .map(|d| {
            (
                d.file.as_str(),
                matches!(d.problem, Problem::MissingFile(_)),
            )
        })
        .collect();
    assert_eq!(
        files[..2],
        [
            (c.file("quests.json").as_str(), true),
            (c.file("world.json").as_str(), true)
        ],
        "{}",
        render(&diagnostics)
    );
    assert!(
        diagnostics
            .iter()
            .any(|d| d.problem.to_string().contains("no conversation was loaded")),
        "{}",
        render(&diagnostics)
    );
}

#[test]
fn a_world_with_no_npcs_or_no_conversations_is_an_error() {
    let c = TempContent::empty("no-npcs");
    c.write(
        "world.json",
        r#"{ "Islands": [ { "Id": "home", "Name": "Home" } ], "Npcs": [] }"#,
    );
    c.write("quests.json", "[]");
    let diagnostics = c.diagnostics();
    c.expect_file_error(&diagnostics, "world.json", other("the world has no NPCs"));
    c.expect_file_error(
        &diagnostics,
        "dialogue/base",
        other("no conversation was loaded"),
    );
    // The same world with an NPC and its conversation is clean.
    let c = TempContent::minimal("some-npcs");
    let diagnostics = c.diagnostics();
    assert!(is_clean(&diagnostics), "{}", render(&diagnostics));
}

#[test]
fn the_older_single_file_beside_the_shards_is_one_error_on_the_old_file() {
    let c = TempContent::minimal("legacy-and-shards");
    let second = world_of(&[generated_npc("second", "home")]);
    c.write(LEGACY_WORLD_FILE, &second);
    c.write(&format!("{WORLD_DIR}/second.json"), &second);
    let diagnostics = c.diagnostics();
    let d = c.expect_file_error(
        &diagnostics,
        LEGACY_WORLD_FILE,
        other("run gen-content again"),
    );
    assert!(d.to_string().contains(WORLD_DIR), "{d}");
    // The old file is not read, so `second` is not "defined twice" as well.
    assert_eq!(errors(&diagnostics).len(), 1, "{}", render(&diagnostics));
}

// ---- the generator's shards ----

/// A transcription of NPC `i` on island `home`, with two quests.
fn transcription(i: usize) -> (String, Vec<u8>) {
    let text = format!(
        r#"{{
      "Npc": {{ "Id": "npc{i}", "Name": "Villager {i}", "Island": "home", "Position": [{i}.0, 0.0, 0.0] }},
      "Conversation": "Villager{i}",
      "Lines": {{ "Greeting": "Hello from {i}.", "Goodbye": "Bye.", "AllDone": "All done." }},
      "Quests": [
        {{ "Id": "Q{i}a", "Kind": "side", "Shape": "work",
          "Objectives": [ {{ "Id": "O", "Kind": "catch", "Target": 2, "Island": "home" }} ],
          "Ask": "Work?",
          "Lines": {{ "Offer": "Catch two.", "Accept": "Thanks.", "Decline": "Pity.",
                     "Check": "Well?", "Reminder": "Not yet.", "Completion": "Lovely." }} }},
        {{ "Id": "Q{i}b", "Kind": "story", "Shape": "talk", "Prerequisites": ["Q{i}a"],
          "Objectives": [ {{ "Id": "Listen", "Kind": "talk" }} ],
          "Ask": "A story?",
          "Lines": {{ "Offer": "Want one?", "Accept": "Sit.", "Decline": "Later.",
                     "Reminder": "Where was I?", "Intermediate": "Once...", "Completion": "The end." }} }}
      ]
    }}"#
    );
    (format!("npc{i}.json"), text.into_bytes())
}

#[test]
fn the_generator_writes_one_small_shard_per_npc_and_the_loader_reads_them_clean() {
    const NPCS: usize = 300;
    let files: Vec<(String, Vec<u8>)> = (0..NPCS).map(transcription).collect();
    let generated = generate::generate(&files).expect("generates");
    assert_eq!(
        generated.len(),
        3 * NPCS,
        "a conversation, an NPC, its quests"
    );
    for i in [0, NPCS - 1] {
        for relative in [
            format!("dialogue/base/Villager{i}.json"),
            format!("{WORLD_DIR}/npc{i}.json"),
            format!("{QUESTS_DIR}/npc{i}.json"),
        ] {
            assert!(generated.contains_key(&relative), "{relative}");
        }
    }
    // No file grows with the number of NPCs.
    let largest = generated.values().map(String::len).max().unwrap_or(0);
    assert!(
        largest < 16 * 1024,
        "the largest generated file is {largest} bytes"
    );

    let c = TempContent::empty("shards-load");
    c.write(
        "world.json",
        r#"{ "Islands": [ { "Id": "home", "Name": "Home" } ], "Npcs": [] }"#,
    );
    c.write("quests.json", "[]");
    for (relative, text) in &generated {
        c.write_untagged(relative, text.as_bytes());
    }
    let (content, diagnostics) = check::load_and_check(&c.root);
    assert!(is_clean(&diagnostics), "{}", render(&diagnostics));
    assert_eq!(content.world.npcs.len(), NPCS);
    assert_eq!(content.quests.len(), 2 * NPCS);
    assert_eq!(content.conversations.len(), NPCS);
    // Each entry knows its shard.
    let i = index_of(&content.world.npcs, |n| &n.id, "npc7");
    assert_eq!(
        content.origins.npc(&content.root, i),
        (
            c.file(&format!("{WORLD_DIR}/npc7.json")),
            "Npcs[1]".to_owned()
        )
    );
    let q = index_of(&content.quests, |q| &q.id, "Q7b");
    assert_eq!(
        content.origins.quest(&content.root, q),
        (c.file(&format!("{QUESTS_DIR}/npc7.json")), "[2]".to_owned())
    );
}

#[test]
fn ids_and_conversations_that_differ_only_in_case_are_refused() {
    let (_, bytes) = transcription(1);
    let text = String::from_utf8(bytes).expect("utf-8");
    let upper = text
        .replace("\"npc1\"", "\"NPC1\"")
        .replace("\"Q1a\"", "\"X1a\"")
        .replace("\"Q1b\"", "\"X1b\"")
        .replace("[\"Q1a\"]", "[\"X1a\"]")
        .replace("\"Villager1\"", "\"VILLAGER1\"");
    let files = vec![
        ("a.json".to_owned(), text.into_bytes()),
        ("b.json".to_owned(), upper.into_bytes()),
    ];
    let errors = generate_errors(&files);
    assert!(
        errors.iter().any(
            |e| e.starts_with("b.json: Npc.Id: NPC `NPC1` differs from `npc1`")
                && e.contains("case-insensitive")
        ),
        "{errors:#?}"
    );
    expect_error_starting(
        &errors,
        "b.json: Conversation: conversation `VILLAGER1` differs",
    );
}

#[test]
fn generated_line_ids_are_unique_even_when_their_parts_repeat() {
    // Accepting and declining with the same words derive the same id from the same parts; the
    // second gets another, so the content checks clean instead of reporting a duplicate id.
    let (_, bytes) = transcription(1);
    let text = String::from_utf8(bytes).expect("utf-8").replace(
        r#""Offer": "Catch two.","#,
        r#""Offer": "Catch two.", "AcceptReply": "Fine.", "DeclineReply": "Fine.","#,
    );
    let generated =
        generate::generate(&[("a.json".to_owned(), text.into_bytes())]).expect("generates");
    let base = &generated["dialogue/base/Villager1.json"];
    let ids: Vec<&str> = base
        .match_indices("\"LineId\": \"")
        .map(|(at, m)| &base[at + m.len()..at + m.len() + 15])
        .collect();
    let unique: std::collections::HashSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
}

#[test]
fn lines_index_for_checks_agrees_with_the_full_index() {
    use banter_dialogue::lines::LineIndex;
    use banter_dialogue::locale::check::check_locales;
    let c = TempContent::minimal("lines-partial");
    let (content, _) = banter_dialogue::content::Content::load(&c.root);
    let full = LineIndex::new(&content);
    let mut ids = full.lines.values();
    let (good, stale) = (
        ids.next().expect("a line"),
        ids.next().expect("another line"),
    );
    let table = format!(
        "msgid \"\"\nmsgstr \"\"\n\"Language: fr\\n\"\n\n\
         msgctxt \"{}\"\nmsgid \"{}\"\nmsgstr \"ok\"\n\n\
         msgctxt \"{}\"\nmsgid \"an older text\"\nmsgstr \"stale\"\n\n\
         msgctxt \"line:0000000000\"\nmsgid \"gone\"\nmsgstr \"unknown\"\n",
        good.id, good.text, stale.id
    );
    c.write("locales/fr.po", &table);
    let (content, loaded) = banter_dialogue::content::Content::load(&c.root);
    assert!(is_clean(&loaded), "{}", render(&loaded));
    let full = LineIndex::new(&content);
    let (partial, total) = LineIndex::with_lines_where(&content, |_| true);
    assert_eq!(total, full.lines.len());
    assert_eq!(partial.lines, full.lines);

    let mut expected = Vec::new();
    let expected_coverage = check_locales(&content.locales, &full, &mut expected);
    let (diagnostics, coverage) = check::check_with_coverage(&content);
    assert_eq!(coverage, expected_coverage);
    assert_eq!(coverage[0].total, full.lines.len());
    assert_eq!((coverage[0].translated, coverage[0].stale), (2, 1));
    let table_file = c.file("locales/fr.po");
    let mut from_tables: Vec<&Diagnostic> = diagnostics
        .iter()
        .filter(|d| d.file == table_file)
        .collect();
    let mut expected: Vec<&Diagnostic> = expected.iter().collect();
    from_tables.sort_by_key(|d| d.to_string());
    expected.sort_by_key(|d| d.to_string());
    assert_eq!(from_tables, expected);
    assert_eq!(expected.len(), 2, "one stale, one unknown: {expected:?}");
}
