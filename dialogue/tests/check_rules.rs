//! One test per content check, each on a small content folder in a temp dir: the minimal clean
//! game of `content_support`, broken in exactly one place.
//!
//! Why one file over 600 lines: a list of independent tests, one per content check, each
//! readable alone.

mod content_support;

use banter_dialogue::check;
use banter_dialogue::{Problem, Severity};
use content_support::{TempContent, expect_one, expect_only, render};

const TALK: &str = "dialogue/base/Talk.json";

fn unknown(what: &'static str, name: &'static str) -> impl Fn(&Problem) -> bool {
    move |p| matches!(p, Problem::UnknownReference { what: w, name: n, .. } if *w == what && n == name)
}

fn other(fragment: &'static str) -> impl Fn(&Problem) -> bool {
    move |p| matches!(p, Problem::Other(m) if m.contains(fragment))
}

#[test]
fn the_minimal_game_is_clean() {
    let c = TempContent::minimal("clean");
    let diagnostics = c.diagnostics();
    assert!(diagnostics.is_empty(), "{}", render(&diagnostics));
    assert!(check::is_clean(&diagnostics));
}

// ---- Errors -------------------------------------------------------------------------------

#[test]
fn a_nextnode_cycle_with_no_way_out_is_an_error() {
    let c = TempContent::minimal("cycle");
    c.edit(
        TALK,
        r#""NextNode": "Bye" } ] },"#,
        r#""NextNode": "Loop_A" } ] },
      "Loop_A": { "Text": "Round", "NextNode": "Loop_B" },
      "Loop_B": { "Text": "and round", "NextNode": "Loop_C" },
      "Loop_C": { "Text": "we go", "NextNode": "Loop_A" },"#,
    );
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(TALK),
        Some("Loop_A"),
        |p| matches!(p, Problem::EndlessCycle(_)),
    );
    assert_eq!(
        d.problem,
        Problem::EndlessCycle("`Loop_A`, `Loop_B` and `Loop_C`".to_owned())
    );
    expect_only(&diagnostics, |d| {
        matches!(d.problem, Problem::EndlessCycle(_))
    });
    assert!(!check::is_clean(&diagnostics));
}

#[test]
fn a_self_loop_and_a_cycle_through_a_branch_are_endless_too() {
    let c = TempContent::minimal("cycle-branch");
    c.edit(
        TALK,
        r#""NextNode": "Bye" } ] },"#,
        r#""NextNode": "Self" } ] },
      "Self": { "Text": "Again?", "NextNode": ["Gated", "Self"] },
      "Gated": { "Text": "Rich!", "Conditions": "coins > 5", "NextNode": "Self" },"#,
    );
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(TALK),
        Some("Gated"),
        |p| matches!(p, Problem::EndlessCycle(_)),
    );
    assert_eq!(
        d.problem,
        Problem::EndlessCycle("`Gated` and `Self`".to_owned())
    );
}

#[test]
fn cycles_with_a_way_out_are_fine() {
    // Each loop can be left: by a response, by a quest check's jump, by a branch whose targets
    // may all fail (the walk then ends), or by an edge out of the loop.
    let c = TempContent::minimal("cycle-exits");
    c.edit(TALK, r#""NextNode": "Bye" } ] },"#, r#""NextNode": "ByResponse" } ] },
      "ByResponse": { "Text": "a", "NextNode": "ByResponse2" },
      "ByResponse2": { "Text": "b", "Responses": [ { "Text": "again", "NextNode": "ByResponse" } ] },
      "ByJump": { "Text": "c", "NextNode": "ByJump2" },
      "ByJump2": { "Text": "d", "Actions": [ { "Type": "CheckQuest", "QuestId": "Fish",
          "SuccessNode": "Bye", "FailureNode": "ByJump" } ], "NextNode": "ByJump" },
      "ByCondition": { "Text": "e", "NextNode": ["ByCondition2"] },
      "ByCondition2": { "Text": "f", "Conditions": "coins < 3", "NextNode": "ByCondition" },
      "ByEdge": { "Text": "g", "NextNode": ["ByEdge2", "Bye"] },
      "ByEdge2": { "Text": "h", "Conditions": "coins < 3", "NextNode": "ByEdge" },"#);
    c.edit(
        TALK,
        r#""AllDone": { "Text": "All done.", "Close": true }"#,
        r#""AllDone": { "Text": "x", "Responses": [
        { "Text": "1", "NextNode": "ByJump" }, { "Text": "2", "NextNode": "ByCondition" },
        { "Text": "3", "NextNode": "ByEdge" } ] }"#,
    );
    let diagnostics = c.diagnostics();
    assert!(diagnostics.is_empty(), "{}", render(&diagnostics));
}

#[test]
fn a_cycle_as_long_as_the_content_does_not_overflow_the_stack() {
    let c = TempContent::minimal("cycle-long");
    let n = 50_000;
    let mut nodes = String::new();
    for i in 0..n {
        nodes.push_str(&format!(
            r#""N{i}": {{ "Text": "line {i}", "NextNode": "N{}" }},"#,
            (i + 1) % n
        ));
    }
    c.edit(
        TALK,
        r#""NextNode": "Bye" } ] },"#,
        &format!(r#""NextNode": "N0" }} ] }}, {nodes}"#),
    );
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(TALK),
        Some("N0"),
        |p| matches!(p, Problem::EndlessCycle(_)),
    );
    assert!(d.to_string().contains("and 49990 more"), "{d}");
}

#[test]
fn an_action_naming_an_unknown_quest_is_an_error() {
    let c = TempContent::minimal("unknown-quest");
    c.edit(
        TALK,
        r#""AcceptQuest", "QuestId": "Fish""#,
        r#""AcceptQuest", "QuestId": "Fsh""#,
    );
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(TALK),
        Some("Fish_Greet"),
        unknown("quest", "Fsh"),
    );
    assert_eq!(d.field.as_deref(), Some("Responses[1].Actions[1].QuestId"));
    assert!(
        d.to_string()
            .ends_with("AcceptQuest names unknown quest `Fsh`"),
        "{d}"
    );
}

#[test]
fn an_objective_not_in_its_quest_is_an_error() {
    let c = TempContent::minimal("unknown-objective");
    c.edit(TALK, r#""Fish_Done": { "Text": "Thanks.", "Actions": ["#, r#""Fish_Done": { "Text": "Thanks.", "Actions": [
        { "Type": "AdvanceObjective", "QuestId": "Fish", "ObjectiveId": "Cach", "Amount": 2, "Island": "home" },"#);
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(TALK),
        Some("Fish_Done"),
        unknown("objective", "Cach"),
    );
    assert_eq!(d.field.as_deref(), Some("Actions[1].ObjectiveId"));
    expect_only(&diagnostics, |d| {
        d.problem == unknown_problem("AdvanceObjective", "objective", "Cach")
    });
}

fn unknown_problem(action: &'static str, what: &'static str, name: &str) -> Problem {
    Problem::UnknownReference {
        action,
        what,
        name: name.to_owned(),
    }
}

#[test]
fn an_objective_on_an_unknown_island_is_an_error() {
    let c = TempContent::minimal("unknown-island");
    c.edit(TALK, r#""Fish_Done": { "Text": "Thanks.", "Actions": ["#, r#""Fish_Done": { "Text": "Thanks.", "Actions": [
        { "Type": "AdvanceObjective", "QuestId": "Fish", "ObjectiveId": "Catch", "Island": "atlantis" },"#);
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(TALK),
        Some("Fish_Done"),
        unknown("island", "atlantis"),
    );
    assert_eq!(d.field.as_deref(), Some("Actions[1].Island"));
}

#[test]
fn a_quest_check_target_that_does_not_exist_is_an_error() {
    let c = TempContent::minimal("unknown-node");
    c.edit(
        TALK,
        r#""SuccessNode": "Fish_Done""#,
        r#""SuccessNode": "Fish_Dne""#,
    );
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(TALK),
        Some("Fish_Check"),
        unknown("node", "Fish_Dne"),
    );
    assert_eq!(
        d.field.as_deref(),
        Some("Responses[1].Actions[1].SuccessNode")
    );
    // Fish_Done is still a quest node, so nothing turns unreachable.
    expect_only(&diagnostics, |x| x == d);
}

#[test]
fn a_quest_check_without_both_targets_is_an_error() {
    let c = TempContent::minimal("check-targets");
    c.edit(
        TALK,
        r#",
        "SuccessNode": "Fish_Done", "FailureNode": "Fish_NotYet""#,
        r#",
        "SuccessNode": "Fish_Done""#,
    );
    c.edit(
        TALK,
        r#""Fish_NotYet": { "Text": "Not yet.", "Close": true },"#,
        "",
    );
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(TALK),
        Some("Fish_Check"),
        |p| *p == Problem::CheckQuestTargets,
    );
    assert_eq!(d.field.as_deref(), Some("Responses[1].Actions[1]"));
    expect_only(&diagnostics, |x| x == d);
}

#[test]
fn conditions_naming_unknown_quests_or_objectives_are_errors() {
    let c = TempContent::minimal("conditions");
    c.edit(TALK, r#"{ "Text": "Work?", "NextNode": "Fish_Greet" }"#, r#"{ "Text": "Work?", "NextNode": "Fish_Greet",
        "Conditions": ["quest(Fihs) != completed", "progress(Fish, Release) < 2", "has(Anything)"] }"#);
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(TALK),
        Some("Hello"),
        unknown("quest", "Fihs"),
    );
    assert_eq!(d.field.as_deref(), Some("Responses[1].Conditions"));
    expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(TALK),
        Some("Hello"),
        unknown("objective", "Release"),
    );
    assert_eq!(diagnostics.len(), 2, "{}", render(&diagnostics));
}

#[test]
fn an_npc_whose_conversation_has_no_base_file_is_an_error() {
    let c = TempContent::minimal("npc-conversation");
    c.edit(
        "world.json",
        r#""Conversation": "Talk""#,
        r#""Conversation": "Tlak""#,
    );
    let diagnostics = c.diagnostics();
    let d = c.expect_file_error(
        &diagnostics,
        "world.json",
        other("speaks conversation `Tlak`"),
    );
    assert_eq!(d.field.as_deref(), Some("Npcs[1].Conversation"));
    assert!(d.to_string().contains("keeper"), "names the NPC: {d}");
}

#[test]
fn an_npc_on_an_unknown_island_is_an_error() {
    let c = TempContent::minimal("npc-island");
    c.edit(
        "world.json",
        r#""Island": "home", "Position""#,
        r#""Island": "hoem", "Position""#,
    );
    let diagnostics = c.diagnostics();
    let d = c.expect_file_error(&diagnostics, "world.json", other("unknown island `hoem`"));
    assert_eq!(d.field.as_deref(), Some("Npcs[1].Island"));
}

#[test]
fn a_duplicate_npc_id_is_an_error_but_a_shared_name_is_not() {
    let c = TempContent::minimal("npc-duplicate");
    c.edit("world.json", r#""Conversation": "Talk" }"#, r#""Conversation": "Talk" },
      { "Id": "keeper2", "Name": "Keeper", "Island": "home", "Position": [5, 0, 0], "Conversation": "Talk" },
      { "Id": "keeper", "Name": "Other", "Island": "home", "Position": [9, 0, 0], "Conversation": "Talk" }"#);
    let diagnostics = c.diagnostics();
    let d = c.expect_file_error(&diagnostics, "world.json", |p| {
        *p == Problem::Duplicate("keeper".to_owned())
    });
    assert_eq!(d.field.as_deref(), Some("Npcs[3].Id"));
    expect_only(&diagnostics, |x| x == d);
}

#[test]
fn a_quest_giver_that_is_not_an_npc_is_an_error() {
    let c = TempContent::minimal("quest-giver");
    c.edit(
        "quests.json",
        r#""Giver": "keeper""#,
        r#""Giver": "Keeper""#,
    );
    let diagnostics = c.diagnostics();
    let d = c.expect_file_error(
        &diagnostics,
        "quests.json",
        other("given by `Keeper`, which is not an NPC id"),
    );
    assert_eq!(d.field.as_deref(), Some("[1].Giver"));
}

#[test]
fn quest_nodes_missing_from_the_givers_conversation_are_errors() {
    let c = TempContent::minimal("quest-nodes");
    c.edit(
        "quests.json",
        r#""Check": "Fish_Check""#,
        r#""Check": "Fish_Chek""#,
    );
    let diagnostics = c.diagnostics();
    let d = c.expect_file_error(
        &diagnostics,
        "quests.json",
        other("opens on node `Fish_Chek`"),
    );
    assert_eq!(d.field.as_deref(), Some("[1].Nodes.Check"));
    // Fish_Check is then reached by nothing: the checks say so.
    expect_one(
        &diagnostics,
        Severity::Warning,
        &c.file(TALK),
        Some("Fish_Check"),
        |p| *p == Problem::Unreachable,
    );
}

#[test]
fn prerequisites_naming_unknown_quests_are_errors() {
    let c = TempContent::minimal("quest-prerequisites");
    c.edit(
        "quests.json",
        r#""Kind": "side","#,
        r#""Kind": "side", "Prerequisites": ["Tutorial"],"#,
    );
    let diagnostics = c.diagnostics();
    let d = c.expect_file_error(
        &diagnostics,
        "quests.json",
        other("requires unknown quest `Tutorial`"),
    );
    assert_eq!(d.field.as_deref(), Some("[1].Prerequisites[1]"));
}

#[test]
fn quests_that_require_each_other_are_errors() {
    let c = TempContent::minimal("quest-prerequisite-cycle");
    c.edit(
        "quests.json",
        r#""Kind": "side","#,
        r#""Kind": "side", "Prerequisites": ["Fish"],"#,
    );
    let diagnostics = c.diagnostics();
    c.expect_file_error(
        &diagnostics,
        "quests.json",
        other("quests `Fish` require each other"),
    );
}

#[test]
fn a_talk_objective_no_action_names_can_never_advance_and_is_an_error() {
    let c = TempContent::minimal("objective-talk");
    c.edit("quests.json", r#""Kind": "catch""#, r#""Kind": "talk""#);
    let diagnostics = c.diagnostics();
    let d = c.expect_file_error(
        &diagnostics,
        "quests.json",
        other("objective `Catch` of quest `Fish` can never advance"),
    );
    assert_eq!(d.field.as_deref(), Some("[1].Objectives[1]"));
    expect_only(&diagnostics, |x| x == d);

    // An AdvanceObjective action naming it, anywhere, makes it advanceable.
    c.edit(
        TALK,
        r#""Fish_NotYet": { "Text": "Not yet.", "Close": true },"#,
        r#""Fish_NotYet": { "Text": "Not yet.", "Actions": [ { "Type": "AdvanceObjective",
            "QuestId": "Fish", "ObjectiveId": "Catch" } ], "Close": true },"#,
    );
    let diagnostics = c.diagnostics();
    assert!(
        !diagnostics
            .iter()
            .any(|d| other("can never advance")(&d.problem)),
        "{}",
        render(&diagnostics)
    );
}

#[test]
fn a_find_objective_with_a_species_or_a_zero_target_can_never_advance() {
    let c = TempContent::minimal("objective-find");
    c.edit(
        "quests.json",
        r#""Kind": "catch", "Target": 2,"#,
        r#""Kind": "find", "Target": 0, "Species": "Sprat","#,
    );
    let diagnostics = c.diagnostics();
    let species = c.expect_file_error(
        &diagnostics,
        "quests.json",
        other("item_found events carry no species"),
    );
    assert_eq!(species.field.as_deref(), Some("[1].Objectives[1].Species"));
    let target = c.expect_file_error(&diagnostics, "quests.json", other("its target is 0"));
    assert_eq!(target.field.as_deref(), Some("[1].Objectives[1].Target"));
}

#[test]
fn accepting_and_completing_without_a_line_between_is_an_error() {
    // The article's lost quest: the reply's CompleteQuest goes out before the response's
    // AcceptQuest, so the quest stays active forever.
    let c = TempContent::minimal("missing-moment");
    c.edit(
        TALK,
        r#""AcceptQuest", "QuestId": "Fish" } ], "NextNode": "Bye""#,
        r#""AcceptQuest", "QuestId": "Fish" } ], "NextNode": "Fish_Done""#,
    );
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(TALK),
        Some("Fish_Done"),
        other("before the `AcceptQuest` of `Fish_Greet_r1`"),
    );
    assert_eq!(d.field.as_deref(), Some("Actions[1]"));
}

// ---- Warnings -----------------------------------------------------------------------------

#[test]
fn a_node_no_entry_point_reaches_is_a_warning() {
    let c = TempContent::minimal("unreachable");
    c.edit(
        TALK,
        r#""Bye": { "Text": "Bye.", "Close": true },"#,
        r#""Bye": { "Text": "Bye.", "Close": true },
      "Orphan": { "Text": "Nobody visits.", "NextNode": "OrphanToo" },
      "OrphanToo": { "Text": "Me neither.", "Close": true },"#,
    );
    let diagnostics = c.diagnostics();
    for node in ["Orphan", "OrphanToo"] {
        expect_one(
            &diagnostics,
            Severity::Warning,
            &c.file(TALK),
            Some(node),
            |p| *p == Problem::Unreachable,
        );
    }
    assert_eq!(diagnostics.len(), 2, "{}", render(&diagnostics));
    assert!(check::is_clean(&diagnostics), "warnings only");
}

#[test]
fn every_kind_of_entry_point_counts_as_reached() {
    // Quest nodes (Fish_Check) and jump targets (Fish_Done, Fish_NotYet) are already in the
    // minimal game; add AllDone and a lockout node.
    let c = TempContent::minimal("entries");
    c.edit(
        TALK,
        r#""AllDone": { "Text": "All done.", "Close": true }"#,
        r#""AllDone": { "Text": "Nothing left.", "NextNode": "AfterAllDone" },
      "AfterAllDone": { "Text": "Really.", "Close": true }"#,
    );
    c.write(
        "dialogue/lockout/Tutorial.json",
        r#"{ "Tutorial_Stage1": { "Text": "Not now, see the pier.", "Close": true } }"#,
    );
    let diagnostics = c.diagnostics();
    assert!(diagnostics.is_empty(), "{}", render(&diagnostics));
}

#[test]
fn a_layer_node_replacing_a_base_node_is_one_warning() {
    let c = TempContent::minimal("override");
    c.write(
        "dialogue/story/Talk.json",
        r#"{ "Bye": { "Text": "Farewell, hero.", "Close": true },
             "Hello": { "Patch": true, "Text": "Hello, hero." } }"#,
    );
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Warning,
        &c.file("dialogue/story/Talk.json"),
        Some("Bye"),
        |p| matches!(p, Problem::Overrides(_)),
    );
    assert!(d.to_string().contains("layer `base`"), "says which: {d}");
    // The patch changes only the text, and is not an override.
    expect_only(&diagnostics, |x| x == d);
    let (content, _) = c.load();
    let hello = &content.merged["Talk"].nodes["Hello"];
    assert_eq!(hello.text, "Hello, hero.");
    assert!(matches!(&hello.exit, banter_dialogue::Exit::Responses(r) if r.len() == 2));
}

#[test]
fn two_responses_with_the_same_text_are_a_warning() {
    let c = TempContent::minimal("duplicate-responses");
    c.edit(
        TALK,
        r#"{ "Text": "No.", "NextNode": "Bye" }"#,
        r#"{ "Text": "No.", "NextNode": "Bye" },
        { "Text": " Yes.", "NextNode": "Bye" },
        { "Text": "Yes.", "Conditions": "coins > 10", "NextNode": "Bye" }"#,
    );
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Warning,
        &c.file(TALK),
        Some("Fish_Greet"),
        |p| matches!(p, Problem::DuplicateResponseText(..)),
    );
    // The conditional variant never shows beside the others, so it is not a duplicate.
    assert_eq!(d.problem, Problem::DuplicateResponseText(1, 3));
    assert_eq!(d.field.as_deref(), Some("Responses[3].Text"));
    expect_only(&diagnostics, |x| x == d);
}

#[test]
fn a_conversation_without_a_speaker_is_a_warning() {
    let c = TempContent::minimal("speaker");
    c.edit(TALK, r#""Speaker": "Keeper","#, "");
    let diagnostics = c.diagnostics();
    let d = expect_one(&diagnostics, Severity::Warning, &c.file(TALK), None, |p| {
        *p == Problem::NoSpeaker
    });
    assert_eq!(d.field.as_deref(), Some("Speaker"));
    expect_only(&diagnostics, |x| x == d);
}

// ---- Order --------------------------------------------------------------------------------

#[test]
fn diagnostics_come_errors_first_then_by_file_and_node() {
    let c = TempContent::minimal("order");
    c.edit(TALK, r#""Speaker": "Keeper","#, "");
    c.edit(
        TALK,
        r#""QuestId": "Fish" } ], "NextNode""#,
        r#""QuestId": "Fissh" } ], "NextNode""#,
    );
    c.edit(
        "world.json",
        r#""Island": "home", "Position""#,
        r#""Island": "nowhere", "Position""#,
    );
    c.edit(
        TALK,
        r#""Bye": { "Text": "Bye.", "Close": true },"#,
        r#""Bye": { "Text": "Bye.", "Close": true },
      "Zed": { "Text": "z", "Close": true }, "Alpha": { "Text": "a", "Close": true },"#,
    );
    let diagnostics = c.diagnostics();
    let summary: Vec<(Severity, String, Option<String>)> = diagnostics
        .iter()
        .map(|d| (d.severity, d.file.clone(), d.node.clone()))
        .collect();
    let talk = c.file(TALK);
    assert_eq!(
        summary,
        vec![
            (Severity::Error, talk.clone(), Some("Fish_Greet".to_owned())),
            (Severity::Error, c.file("world.json"), None),
            (Severity::Warning, talk.clone(), None),
            (Severity::Warning, talk.clone(), Some("Alpha".to_owned())),
            (Severity::Warning, talk, Some("Zed".to_owned())),
        ],
        "{}",
        render(&diagnostics)
    );
    // Checking twice gives the same list.
    assert_eq!(diagnostics, c.diagnostics());
}
