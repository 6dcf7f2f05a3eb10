//! `check-content` proves the entry resolver total: for every NPC that gives quests and every
//! reachable combination of its quests' states, the resolver yields one node that exists.

use std::path::{Path, PathBuf};

use banter_dialogue::check::{is_clean, load_and_check};
use banter_dialogue::condition::QuestStatus;
use banter_dialogue::resolver::{ALL_DONE, resolve_entry};

const WORLD: &str = r#"{
  "Islands": [ { "Id": "cove", "Name": "Cove" } ],
  "Npcs": [
    { "Id": "mara", "Name": "Mara", "Island": "cove", "Position": [0.0, 0.0, 0.0], "Conversation": "Mara" },
    { "Id": "tom", "Name": "Tom", "Island": "cove", "Position": [30.0, 0.0, 0.0], "Conversation": "Tom" }
  ]
}"#;

const QUESTS: &str = r#"[
  {
    "Id": "First", "Giver": "mara", "Kind": "side",
    "Objectives": [ { "Id": "Fish", "Kind": "catch", "Target": 2 } ],
    "Nodes": { "Greeting": "First_Greet", "Check": "First_Check" }
  },
  {
    "Id": "Second", "Giver": "mara", "Kind": "story", "Prerequisites": ["First"],
    "Objectives": [ { "Id": "Find", "Kind": "find" } ],
    "Nodes": { "Greeting": "Second_Greet", "Check": "Second_Check" }
  }
]"#;

fn mara(with_all_done: bool) -> String {
    let all_done = if with_all_done {
        r#", "AllDone": { "Text": "Nothing more today.", "Close": true }"#
    } else {
        ""
    };
    let first = quest_nodes("First", "Catch me two fish?", "Fish?", "Thanks!");
    let second = quest_nodes("Second", "Find my ring?", "Ring?", "My ring!");
    format!(
        r#"{{
  "FirstNode": "Hello",
  "Speaker": "Mara",
  "Hello": {{ "Text": "Hello.", "Close": true }},
{first}{second}  "Bye": {{ "Text": "Bye.", "Close": true }}{all_done}
}}"#
    )
}

/// A quest's nodes in Mara's conversation: the offer (`<id>_Greet`), the check (`<id>_Check`)
/// and the thanks as it completes (`<id>_Done`); each ends the conversation at `Bye`.
fn quest_nodes(id: &str, offer: &str, check: &str, thanks: &str) -> String {
    format!(
        r#"  "{id}_Greet": {{
    "Text": "{offer}",
    "Responses": [
      {{ "Text": "Sure.", "Actions": [ {{ "Type": "AcceptQuest", "QuestId": "{id}" }} ], "NextNode": "Bye" }},
      {{ "Text": "No.", "NextNode": "Bye" }}
    ]
  }},
  "{id}_Check": {{
    "Text": "{check}",
    "Responses": [
      {{ "Text": "Here.", "Actions": [ {{ "Type": "CheckQuest", "QuestId": "{id}", "SuccessNode": "{id}_Done", "FailureNode": "Bye" }} ] }},
      {{ "Text": "Not yet.", "NextNode": "Bye" }}
    ]
  }},
  "{id}_Done": {{
    "Text": "{thanks}",
    "Actions": [ {{ "Type": "CompleteQuest", "QuestId": "{id}" }} ],
    "Close": true
  }},
"#
    )
}

const TOM: &str = r#"{
  "FirstNode": "Tom_Hello",
  "Speaker": "Tom",
  "Tom_Hello": { "Text": "Hm.", "Close": true }
}"#;

fn fixture(label: &str, with_all_done: bool) -> PathBuf {
    let root = std::env::temp_dir().join(format!("banter-resolver-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("dialogue/base")).expect("folders");
    write(&root, "world.json", WORLD);
    write(&root, "quests.json", QUESTS);
    write(&root, "dialogue/base/Mara.json", &mara(with_all_done));
    write(&root, "dialogue/base/Tom.json", TOM);
    root
}

/// Writes a fixture file; a conversation is line-tagged first, as `strings tag` would.
fn write(root: &Path, file: &str, text: &str) {
    let text = if file.starts_with("dialogue/") {
        let format = banter_dialogue::lines::Format::of(file);
        let mut taken = std::collections::HashSet::new();
        banter_dialogue::lines::tag_file(file, text, format, &mut taken)
            .map(|(tagged, _)| tagged)
            .expect("fixture JSON")
    } else {
        text.to_owned()
    };
    std::fs::write(root.join(file), text).expect("write fixture");
}

fn totality_errors(root: &Path) -> Vec<String> {
    let (_, diagnostics) = load_and_check(root);
    diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.problem.to_string())
        .filter(|m| m.contains("entry resolver"))
        .collect()
}

#[test]
fn a_complete_questline_is_total_and_clean() {
    let root = fixture("clean", true);
    let (_, diagnostics) = load_and_check(&root);
    assert!(is_clean(&diagnostics), "{diagnostics:#?}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_quest_giver_without_all_done_is_an_error_naming_the_npc_and_the_states() {
    let root = fixture("no-all-done", false);
    let errors = totality_errors(&root);
    assert_eq!(errors.len(), 1, "{errors:?}");
    let error = &errors[0];
    assert!(error.contains("`mara`"), "{error}");
    assert!(error.contains("AllDone"), "{error}");
    // The only combination with nothing to offer: both quests completed.
    assert!(error.contains("First completed"), "{error}");
    assert!(error.contains("Second completed"), "{error}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_greeting_missing_from_the_conversation_is_found_in_its_combination() {
    let root = fixture("no-greeting", true);
    let broken = mara(true).replace("\"Second_Greet\"", "\"Second_Hello\"");
    write(&root, "dialogue/base/Mara.json", &broken);
    let errors = totality_errors(&root);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("Second_Greet") && e.contains("First completed")),
        "{errors:?}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_resolver_follows_the_article_order() {
    let root = fixture("order", true);
    let (content, _) = load_and_check(&root);
    let status = |first: QuestStatus, second: QuestStatus| {
        move |q: &banter_dialogue::content::QuestDef| {
            if q.id == "First" { first } else { second }
        }
    };
    use QuestStatus::*;
    let entry =
        |f, s, tracked| resolve_entry(&content, "mara", Some("Hello"), tracked, status(f, s));
    assert_eq!(entry(Available, Unavailable, None), Some("First_Greet"));
    assert_eq!(entry(Active, Unavailable, None), Some("First_Check"));
    assert_eq!(entry(Completed, Available, None), Some("Second_Greet"));
    assert_eq!(entry(Completed, Active, None), Some("Second_Check"));
    assert_eq!(entry(Completed, Completed, None), Some(ALL_DONE));
    // An NPC with no quests opens on its FirstNode.
    assert_eq!(
        resolve_entry(&content, "tom", Some("Tom_Hello"), None, |_| Available),
        Some("Tom_Hello")
    );
    let _ = std::fs::remove_dir_all(&root);
}
