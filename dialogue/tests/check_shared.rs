//! One test per shared-conversation diagnostic (docs/CONTENT.md, "Shared conversations"), each
//! on the minimal clean game of `content_support` made shared and broken in exactly one place:
//! every error names its file, and its node when it is on one.

mod content_support;

use banter_dialogue::check;
use banter_dialogue::{ChoiceRule, Problem, Severity};
use banter_protocol::{ChoiceMode, TieRule};
use content_support::{TempContent, expect_one, render};

const TALK: &str = "dialogue/base/Talk.json";
const FIRST: &str = r#""FirstNode": "Hello","#;

/// The minimal game with its conversation shared by `shared` (the text after `"Shared": `).
fn shared(tag: &str, shared: &str) -> TempContent {
    let c = TempContent::minimal(tag);
    c.edit(TALK, FIRST, &format!(r#"{FIRST} "Shared": {shared},"#));
    c
}

/// Puts `choice` (the text after `"Choice": `) on the node whose key and first field are `at`.
fn choice_on(c: &TempContent, at: &str, choice: &str) {
    let (key, rest) = at.split_once('{').expect("a node's opening");
    c.edit(TALK, at, &format!(r#"{key}{{ "Choice": {choice},{rest}"#));
}

const HELLO: &str = r#""Hello": { "Text": "Hi.""#;
const BYE: &str = r#""Bye": { "Text": "Bye.""#;

fn error_on(c: &TempContent, node: Option<&str>, field: &str, problem: impl Fn(&Problem) -> bool) {
    let diagnostics = c.diagnostics();
    let d = expect_one(&diagnostics, Severity::Error, &c.file(TALK), node, problem);
    assert_eq!(d.field.as_deref(), Some(field), "{d}");
    assert!(!check::is_clean(&diagnostics));
}

#[test]
fn a_shared_conversation_with_a_node_choice_is_clean_and_carries_its_rules() {
    let c = shared(
        "shared-clean",
        r#"{ "Mode": "Majority", "TimeLimit": 20, "Tie": "First" }"#,
    );
    choice_on(&c, HELLO, r#"{ "Mode": "Roll" }"#);
    let (content, diagnostics) = c.load();
    assert!(diagnostics.is_empty(), "{}", render(&diagnostics));
    let graph = &content.conversations["Talk"];
    let majority = ChoiceRule {
        mode: ChoiceMode::Majority,
        time_limit_secs: Some(20),
        tie: TieRule::First,
    };
    assert_eq!(graph.shared(), Some(majority));
    let hello = graph.find("Hello").expect("Hello");
    let roll = ChoiceRule {
        mode: ChoiceMode::Roll,
        time_limit_secs: None,
        tie: TieRule::Leader,
    };
    assert_eq!(graph.choice_rule(hello), Some(roll));
    let check = graph.find("Fish_Check").expect("Fish_Check");
    assert_eq!(graph.choice_rule(check), Some(majority));
    // The defaults: `{}` is Leader; Majority waits 30 s unless told.
    for (text, rule) in [
        (
            "{}",
            ChoiceRule {
                mode: ChoiceMode::Leader,
                time_limit_secs: None,
                tie: TieRule::Leader,
            },
        ),
        (
            r#"{ "Mode": "Majority" }"#,
            ChoiceRule {
                mode: ChoiceMode::Majority,
                time_limit_secs: Some(30),
                tie: TieRule::Leader,
            },
        ),
        (
            r#"{ "Mode": "Roll", "TimeLimit": 45 }"#,
            ChoiceRule {
                mode: ChoiceMode::Roll,
                time_limit_secs: Some(45),
                tie: TieRule::Leader,
            },
        ),
        (
            r#"{ "Mode": "All" }"#,
            ChoiceRule {
                mode: ChoiceMode::All,
                time_limit_secs: None,
                tie: TieRule::Leader,
            },
        ),
    ] {
        let c = shared("shared-defaults", text);
        let (content, diagnostics) = c.load();
        assert!(diagnostics.is_empty(), "{text}: {}", render(&diagnostics));
        assert_eq!(content.conversations["Talk"].shared(), Some(rule), "{text}");
    }
}

#[test]
fn a_conversation_without_shared_is_walked_alone() {
    let c = TempContent::minimal("not-shared");
    let (content, diagnostics) = c.load();
    assert!(diagnostics.is_empty(), "{}", render(&diagnostics));
    let graph = &content.conversations["Talk"];
    assert_eq!(graph.shared(), None);
    assert_eq!(graph.choice_rule(graph.find("Hello").expect("Hello")), None);
}

#[test]
fn an_unknown_key_in_shared_is_an_error() {
    let c = shared(
        "shared-unknown-key",
        r#"{ "Mode": "Majority", "Quorum": 2 }"#,
    );
    error_on(
        &c,
        None,
        "Shared.Quorum",
        |p| matches!(p, Problem::UnknownField(k) if k == "Quorum"),
    );
}

#[test]
fn an_unknown_mode_or_tie_is_an_error() {
    let c = shared("shared-unknown-mode", r#"{ "Mode": "Vote" }"#);
    error_on(
        &c,
        None,
        "Shared.Mode",
        |p| matches!(p, Problem::UnknownValue { value, .. } if value == "Vote"),
    );
    let c = shared(
        "shared-unknown-tie",
        r#"{ "Mode": "Majority", "Tie": "leader" }"#,
    );
    error_on(
        &c,
        None,
        "Shared.Tie",
        |p| matches!(p, Problem::UnknownValue { value, .. } if value == "leader"),
    );
    let c = shared("shared-wrong-type", r#""Majority""#);
    error_on(&c, None, "Shared", |p| {
        matches!(p, Problem::WrongType { .. })
    });
}

#[test]
fn an_unknown_key_or_value_in_a_node_choice_is_an_error_on_its_node() {
    let c = shared("choice-unknown-key", "{}");
    choice_on(&c, HELLO, r#"{ "Mode": "Roll", "Dice": 6 }"#);
    error_on(
        &c,
        Some("Hello"),
        "Choice.Dice",
        |p| matches!(p, Problem::UnknownField(k) if k == "Dice"),
    );
    let c = shared("choice-unknown-value", "{}");
    choice_on(&c, HELLO, r#"{ "Mode": "Coin" }"#);
    error_on(
        &c,
        Some("Hello"),
        "Choice.Mode",
        |p| matches!(p, Problem::UnknownValue { value, .. } if value == "Coin"),
    );
}

#[test]
fn a_time_limit_must_be_whole_seconds_from_1_to_600() {
    for (limit, problem) in [
        ("0", "bad"),
        ("601", "bad"),
        ("-5", "bad"),
        ("1.5", "bad"),
        ("99999999999", "bad"),
        (r#""30""#, "type"),
        ("null", "type"),
    ] {
        let c = shared(
            "shared-time-limit",
            &format!(r#"{{ "Mode": "Majority", "TimeLimit": {limit} }}"#),
        );
        error_on(&c, None, "Shared.TimeLimit", |p| match problem {
            "bad" => matches!(p, Problem::BadTimeLimit(_)),
            _ => matches!(p, Problem::WrongType { .. }),
        });
    }
    for limit in [1, 600] {
        let c = shared(
            "shared-time-limit-ok",
            &format!(r#"{{ "Mode": "Majority", "TimeLimit": {limit} }}"#),
        );
        let diagnostics = c.diagnostics();
        assert!(diagnostics.is_empty(), "{limit}: {}", render(&diagnostics));
    }
}

#[test]
fn a_time_limit_with_leader_or_all_is_an_error() {
    for shared_text in [
        r#"{ "TimeLimit": 10 }"#,
        r#"{ "Mode": "Leader", "TimeLimit": 10 }"#,
        r#"{ "Mode": "All", "TimeLimit": 10 }"#,
    ] {
        let c = shared("time-limit-leader", shared_text);
        error_on(&c, None, "Shared.TimeLimit", |p| {
            matches!(p, Problem::TimeLimitWithoutTimer(..))
        });
    }
    // A node's Choice is a whole rule: a TimeLimit without its own Mode is a Leader's, even in
    // a Majority conversation, and the message says so.
    let c = shared("time-limit-choice", r#"{ "Mode": "Majority" }"#);
    choice_on(&c, HELLO, r#"{ "TimeLimit": 10 }"#);
    error_on(
        &c,
        Some("Hello"),
        "Choice.TimeLimit",
        |p| matches!(p, Problem::TimeLimitWithoutTimer("Leader", hint) if hint.contains("whole rule")),
    );
}

#[test]
fn a_tie_rule_with_anything_but_majority_is_an_error() {
    for mode in ["Leader", "Roll", "All"] {
        let c = shared(
            "tie-not-majority",
            &format!(r#"{{ "Mode": "{mode}", "Tie": "First" }}"#),
        );
        error_on(
            &c,
            None,
            "Shared.Tie",
            |p| matches!(p, Problem::TieWithoutMajority(m, _) if *m == mode),
        );
    }
    let c = shared("tie-choice", r#"{ "Mode": "Majority" }"#);
    choice_on(&c, HELLO, r#"{ "Mode": "Roll", "Tie": "Roll" }"#);
    error_on(&c, Some("Hello"), "Choice.Tie", |p| {
        matches!(p, Problem::TieWithoutMajority("Roll", ""))
    });
}

#[test]
fn a_node_choice_in_a_conversation_that_is_not_shared_is_an_error() {
    let c = TempContent::minimal("choice-not-shared");
    choice_on(&c, HELLO, r#"{ "Mode": "All" }"#);
    error_on(&c, Some("Hello"), "Choice", |p| {
        matches!(p, Problem::ChoiceNotShared)
    });
}

#[test]
fn a_node_choice_on_a_node_without_responses_is_an_error() {
    let c = shared("choice-no-responses", "{}");
    choice_on(&c, BYE, r#"{ "Mode": "All" }"#);
    error_on(&c, Some("Bye"), "Choice", |p| {
        matches!(p, Problem::ChoiceWithoutResponses)
    });
}

#[test]
fn shared_in_a_layer_file_is_an_error_on_that_file() {
    for (layer, file) in [
        ("side", "dialogue/side/Talk.json"),
        ("story", "dialogue/story/Talk.json"),
        ("lockout", "dialogue/lockout/Lock.json"),
    ] {
        let c = shared("shared-layer", r#"{ "Mode": "Majority" }"#);
        c.write(
            file,
            r#"{ "Shared": { "Mode": "All" }, "Lock_Line": { "Text": "Later.", "Close": true } }"#,
        );
        let diagnostics = c.diagnostics();
        let d = expect_one(
            &diagnostics,
            Severity::Error,
            &c.file(file),
            None,
            |p| matches!(p, Problem::SharedInLayer(l) if l == layer),
        );
        assert_eq!(d.field.as_deref(), Some("Shared"), "{d}");
        // The base file's rule stands.
        let (content, _) = c.load();
        assert_eq!(
            content.conversations["Talk"].shared().map(|r| r.mode),
            Some(ChoiceMode::Majority)
        );
    }
}

#[test]
fn a_conditional_response_carrying_check_quest_is_an_error_in_a_shared_conversation() {
    let conditional =
        r#"{ "Text": "Look.", "Conditions": "coins >= 0", "Actions": [ { "Type": "CheckQuest""#;
    let plain = r#"{ "Text": "Look.", "Actions": [ { "Type": "CheckQuest""#;
    // Alone, it is fine.
    let c = TempContent::minimal("conditional-check-solo");
    c.edit(TALK, plain, conditional);
    let diagnostics = c.diagnostics();
    assert!(diagnostics.is_empty(), "{}", render(&diagnostics));
    // Shared, it is not.
    let c = shared("conditional-check-shared", "{}");
    c.edit(TALK, plain, conditional);
    error_on(&c, Some("Fish_Check"), "Responses[1].Actions[1]", |p| {
        matches!(p, Problem::ConditionalCheckInShared)
    });
}

#[test]
fn the_editor_format_says_shared_and_choice_with_the_same_keys_and_checks() {
    let editor = |shared: &str, choice: &str| {
        format!(
            r#"{{ "Format": "banter-editor/1", "Speaker": "Keeper", "FirstNode": {{ "Id": 1 }},
              "Shared": {shared},
              "Nodes": [
                {{ "Id": 1, "Name": "Hello", "Text": "Hi.", "Choice": {choice}, "Responses": [
                  {{ "Text": "Work?", "Next": {{ "Id": 3 }} }}, {{ "Text": "Bye.", "Next": {{ "Id": 2 }} }} ] }},
                {{ "Id": 2, "Name": "Bye", "Text": "Bye.", "Close": true }},
                {{ "Id": 3, "Name": "Fish_Greet", "Text": "Catch two.", "Responses": [
                  {{ "Text": "Yes.", "Actions": [ {{ "Type": "AcceptQuest", "QuestId": "Fish" }} ], "Next": {{ "Id": 2 }} }},
                  {{ "Text": "No.", "Next": {{ "Id": 2 }} }} ] }},
                {{ "Id": 4, "Name": "Fish_Check", "Text": "Well?", "Responses": [
                  {{ "Text": "Look.", "Actions": [ {{ "Type": "CheckQuest", "QuestId": "Fish",
                      "SuccessNode": "Fish_Done", "FailureNode": "Fish_NotYet" }} ] }} ] }},
                {{ "Id": 5, "Name": "Fish_NotYet", "Text": "Not yet.", "Close": true }},
                {{ "Id": 6, "Name": "Fish_Done", "Text": "Thanks.", "Actions": [ {{ "Type": "CompleteQuest", "QuestId": "Fish" }} ], "Close": true }},
                {{ "Id": 7, "Name": "AllDone", "Text": "All done.", "Close": true }}
              ] }}"#
        )
    };
    let file = "dialogue/base/Talk.editor.json";
    let c = TempContent::minimal("editor-shared");
    std::fs::remove_file(c.root.join(TALK)).expect("remove the canonical twin");
    c.write(
        file,
        &editor(
            r#"{ "Mode": "Majority", "TimeLimit": 20, "Tie": "Leader" }"#,
            r#"{ "Mode": "Roll" }"#,
        ),
    );
    let (content, diagnostics) = c.load();
    assert!(diagnostics.is_empty(), "{}", render(&diagnostics));
    let graph = &content.conversations["Talk"];
    assert_eq!(graph.shared().map(|r| r.time_limit_secs), Some(Some(20)));
    let hello = graph.find("Hello").expect("Hello");
    assert_eq!(
        graph.choice_rule(hello).map(|r| r.mode),
        Some(ChoiceMode::Roll)
    );

    c.write(
        file,
        &editor(
            r#"{ "Mode": "All", "Tie": "First" }"#,
            r#"{ "Mode": "Dice" }"#,
        ),
    );
    let diagnostics = c.diagnostics();
    let d = expect_one(&diagnostics, Severity::Error, &c.file(file), None, |p| {
        matches!(p, Problem::TieWithoutMajority("All", _))
    });
    assert_eq!(d.field.as_deref(), Some("Shared.Tie"));
    expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(file),
        Some("Hello"),
        |p| matches!(p, Problem::UnknownValue { value, .. } if value == "Dice"),
    );
}

#[test]
fn a_layer_may_patch_a_nodes_choice_but_not_make_the_conversation_shared() {
    let c = shared("choice-patch", r#"{ "Mode": "Majority" }"#);
    c.write(
        "dialogue/side/Talk.json",
        r#"{ "Hello": { "Patch": true, "Choice": { "Mode": "All" } } }"#,
    );
    let (content, diagnostics) = c.load();
    assert!(diagnostics.is_empty(), "{}", render(&diagnostics));
    let graph = &content.conversations["Talk"];
    let hello = graph.find("Hello").expect("Hello");
    assert_eq!(
        graph.choice_rule(hello).map(|r| r.mode),
        Some(ChoiceMode::All)
    );
    // The patch changed only the rule: the responses are the base's.
    assert_eq!(graph.outputs(hello).len(), 2);
    assert_eq!(content.merged["Talk"].nodes["Hello"].text, "Hi.");
}
