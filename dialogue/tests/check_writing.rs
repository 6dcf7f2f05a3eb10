//! One test per writing-power error class (docs/CONTENT.md, "What check-content refuses"), each
//! on the minimal clean game of `content_support` with variables declared and broken in exactly
//! one place: every error names its file, and its node and field when it is on one.

mod content_support;

use banter_dialogue::check;
use banter_dialogue::{Problem, Severity};
use content_support::{TempContent, expect_one, render};

const TALK: &str = "dialogue/base/Talk.json";
const VARIABLES: &str = r#"{
  "Variables": { "Met": { "Type": "bool", "Default": false },
                 "Nets": { "Type": "int", "Default": 0 },
                 "Mood": { "Type": "string", "Default": "calm" } },
  "Derived": { "Regular": "opens >= 2 || $Nets >= 3" }
}"#;
const BYE: &str = r#""Bye": { "Text": "Bye.", "Close": true }"#;

/// The minimal game with `variables.json` and `extra` nodes added after `Bye`.
fn game(tag: &str, extra: &str) -> TempContent {
    let c = TempContent::minimal(tag);
    c.write("variables.json", VARIABLES);
    c.edit(TALK, BYE, &format!("{BYE},\n{extra}"));
    c
}

fn error_on(c: &TempContent, node: &str, field: &str, problem: impl Fn(&Problem) -> bool) {
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Error,
        &c.file(TALK),
        Some(node),
        problem,
    );
    assert_eq!(d.field.as_deref(), Some(field), "{d}");
    assert!(!check::is_clean(&diagnostics));
}

#[test]
fn every_feature_used_well_is_clean() {
    let c = game(
        "writing-clean",
        r#""Idle": { "Text": "Hm.", "Once": true, "Conditions": "$Regular && $Mood == \"calm\" && visits(Hello) >= 1",
            "Actions": [ { "Type": "SetVariable", "Variable": "Met", "Value": "true" },
                         { "Type": "SetVariable", "Variable": "Nets", "Value": "-3" } ],
            "NextNode": { "Pick": "Weighted", "Among": [ { "Node": "Bye", "Weight": 3 }, "Hello" ] } },
        "Pick": { "Text": "Which?", "Responses": [
            { "Text": "Rich.", "Conditions": "coins >= 100", "Disabled": "Needs 100 coins.", "NextNode": "Bye" },
            { "Text": "Once.", "Once": true, "NextNode": { "Pick": "LeastRecent", "Among": ["Idle", "Bye"], "Fallback": "Bye" } },
            { "Text": "Leave.", "NextNode": "Bye" } ] }"#,
    );
    let (_, diagnostics) = c.load();
    let errors: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.is_error())
        .cloned()
        .collect();
    assert!(errors.is_empty(), "{}", render(&errors));
}

#[test]
fn an_undeclared_variable_is_refused_in_a_condition_and_in_a_set() {
    let c = game(
        "writing-undeclared",
        r#""Idle": { "Text": "Hm.", "Conditions": "$Gold > 3" }"#,
    );
    error_on(
        &c,
        "Idle",
        "Conditions",
        |p| matches!(p, Problem::UndeclaredVariable(v) if v == "Gold"),
    );
    let c = game(
        "writing-undeclared-set",
        r#""Idle": { "Text": "Hm.", "Actions": [ { "Type": "SetVariable", "Variable": "Gold", "Value": "1" } ] }"#,
    );
    error_on(
        &c,
        "Idle",
        "Actions[1]",
        |p| matches!(p, Problem::UndeclaredVariable(v) if v == "Gold"),
    );
}

#[test]
fn a_type_error_is_refused_in_a_condition_and_in_a_set() {
    for (tag, condition) in [
        ("int-as-condition", "$Nets"),
        ("bool-as-value", "$Met == 1"),
        ("string-vs-int", "$Mood == 3"),
        ("string-order", r#"$Mood < "z""#),
    ] {
        let c = game(
            &format!("writing-type-{tag}"),
            &format!(r#""Idle": {{ "Text": "Hm.", "Conditions": {condition:?} }}"#),
        );
        error_on(&c, "Idle", "Conditions", |p| {
            matches!(p, Problem::VariableType(_))
        });
    }
    let c = game(
        "writing-type-set",
        r#""Idle": { "Text": "Hm.", "Responses": [ { "Text": "Ok.", "Actions": [ { "Type": "SetVariable", "Variable": "Nets", "Value": "lots" } ] } ] }"#,
    );
    error_on(
        &c,
        "Idle",
        "Responses[1].Actions[1]",
        |p| matches!(p, Problem::VariableType(m) if m.contains("`lots`")),
    );
}

#[test]
fn a_cycle_among_derived_variables_is_named_whole() {
    let c = TempContent::minimal("writing-cycle");
    c.write(
        "variables.json",
        r#"{ "Derived": { "A": "$B && true", "B": "$C", "C": "$A || false" } }"#,
    );
    let diagnostics = c.diagnostics();
    let d = expect_one(
        &diagnostics,
        Severity::Error,
        &c.file("variables.json"),
        None,
        |p| matches!(p, Problem::DerivedCycle(cycle) if cycle == "A -> B -> C -> A"),
    );
    assert_eq!(d.field.as_deref(), Some("Derived.A"), "{d}");
}

#[test]
fn a_write_to_a_read_only_fact_is_refused() {
    for variable in ["coins", "Regular"] {
        let c = game(
            &format!("writing-readonly-{variable}"),
            &format!(
                r#""Idle": {{ "Text": "Hm.", "Actions": [ {{ "Type": "SetVariable", "Variable": "{variable}", "Value": "true" }} ] }}"#
            ),
        );
        error_on(
            &c,
            "Idle",
            "Actions[1]",
            |p| matches!(p, Problem::ReadOnlyFact(v) if v == variable),
        );
    }
}

#[test]
fn a_group_that_can_never_hold_is_refused_unless_it_falls_back() {
    let nodes = r#""A": { "Text": "a", "Conditions": "false" },
        "B": { "Text": "b", "Conditions": "coins > 5 && coins < 3" },
        "C": { "Text": "c", "Conditions": "$Met && !$Met" },"#;
    let c = game(
        "writing-empty-group",
        &format!(
            r#"{nodes} "Idle": {{ "Text": "Hm.", "NextNode": {{ "Pick": "MostSpecific", "Among": ["A", "B", "C"] }} }}"#
        ),
    );
    error_on(&c, "Idle", "NextNode", |p| {
        matches!(p, Problem::EmptyGroup(_))
    });
    let c = game(
        "writing-empty-group-fallback",
        &format!(
            r#"{nodes} "Idle": {{ "Text": "Hm.", "NextNode": {{ "Pick": "MostSpecific", "Among": ["A", "B", "C"], "Fallback": "Bye" }} }}"#
        ),
    );
    assert!(
        !c.diagnostics()
            .iter()
            .any(|d| matches!(d.problem, Problem::EmptyGroup(_))),
        "a fallback makes it fine"
    );
}

#[test]
fn a_line_of_greyed_out_buttons_only_is_a_soft_lock() {
    let c = game(
        "writing-soft-lock",
        r#""Idle": { "Text": "Hm.", "Responses": [
            { "Text": "Buy.", "Conditions": "coins >= 100", "Disabled": "Needs 100 coins.", "NextNode": "Bye" },
            { "Text": "Thanks.", "Once": true, "NextNode": "Bye" } ] }"#,
    );
    error_on(&c, "Idle", "Responses", |p| {
        matches!(p, Problem::SoftLock(_))
    });
    // Conditions that cover every case are no lock.
    let c = game(
        "writing-soft-lock-covered",
        r#""Idle": { "Text": "Hm.", "Responses": [
            { "Text": "Buy.", "Conditions": "$Met", "Disabled": "Meet me first.", "NextNode": "Bye" },
            { "Text": "Hello.", "Conditions": "!$Met", "NextNode": "Bye" } ] }"#,
    );
    assert!(
        !c.diagnostics()
            .iter()
            .any(|d| matches!(d.problem, Problem::SoftLock(_))),
        "covered"
    );
}

#[test]
fn visits_of_an_unknown_line_and_weights_without_weighted_are_refused() {
    let c = game(
        "writing-visits",
        r#""Idle": { "Text": "Hm.", "Conditions": "visited(Nowhere)" }"#,
    );
    error_on(
        &c,
        "Idle",
        "Conditions",
        |p| matches!(p, Problem::UnknownVisited(v) if v == "Nowhere"),
    );
    let c = game(
        "writing-weight",
        r#""Idle": { "Text": "Hm.", "NextNode": { "Pick": "First", "Among": [ { "Node": "Bye", "Weight": 2 } ] } }"#,
    );
    error_on(
        &c,
        "Idle",
        "NextNode",
        |p| matches!(p, Problem::BadGroup(m) if m.contains("Weight")),
    );
}
