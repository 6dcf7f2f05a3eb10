//! Bad input: each case gives a clear error naming the file and, for what a parser sees, the
//! line and column (for what the decoder sees, the node and field), and nothing panics.

mod content_support;

use banter_dialogue::json::MAX_FILE_BYTES;
use banter_dialogue::{Diagnostic, Position, Problem};
use content_support::{TempContent, render};

/// Parses bytes as a canonical and as an editor file; both must fail the same way.
fn parse_both(bytes: &[u8]) -> Vec<Vec<Diagnostic>> {
    ["bad/Case.json", "bad/Case.editor.json"]
        .into_iter()
        .map(|file| {
            let mut diagnostics = Vec::new();
            let parsed = banter_dialogue::parse_conversation_file(file, bytes, &mut diagnostics);
            assert!(parsed.is_none(), "{file}: must not parse");
            assert!(
                diagnostics.iter().all(|d| d.file == file && d.is_error()),
                "{}",
                render(&diagnostics)
            );
            diagnostics
        })
        .collect()
}

fn single(diagnostics: &[Diagnostic]) -> &Diagnostic {
    assert_eq!(diagnostics.len(), 1, "{}", render(diagnostics));
    &diagnostics[0]
}

#[test]
fn malformed_json_names_line_and_column() {
    let text = "{\n  \"FirstNode\": \"A\",\n  \"A\": { \"Text\": \"x\", }\n}";
    for diagnostics in parse_both(text.as_bytes()) {
        let d = single(&diagnostics);
        assert!(matches!(d.problem, Problem::Syntax(_)), "{d}");
        assert_eq!(d.position.map(|p| p.line), Some(3), "{d}");
        assert!(d.to_string().contains("Case"), "{d}");
        assert!(d.to_string().contains(":3:"), "{d}");
    }
}

#[test]
fn an_empty_file_is_an_error() {
    for text in ["", "  \n\t\n"] {
        for diagnostics in parse_both(text.as_bytes()) {
            assert_eq!(single(&diagnostics).problem, Problem::Empty);
        }
    }
}

#[test]
fn non_utf8_bytes_name_where_they_start() {
    let bytes = b"{\n  \"FirstNode\": \"A\",\n  \"A\": { \"Text\": \"caf\xe9\" }\n}";
    for diagnostics in parse_both(bytes) {
        let d = single(&diagnostics);
        assert_eq!(d.problem, Problem::NotUtf8);
        assert_eq!(
            d.position,
            Some(Position {
                line: 3,
                column: 22
            }),
            "{d}"
        );
    }
}

#[test]
fn a_file_over_the_size_limit_is_refused_before_parsing() {
    let big = vec![b' '; 10 * 1024 * 1024];
    for diagnostics in parse_both(&big) {
        let d = single(&diagnostics);
        assert_eq!(
            d.problem,
            Problem::TooLarge {
                size: big.len() as u64,
                limit: MAX_FILE_BYTES
            }
        );
    }
    // The loader refuses it from its size on disk, without reading it.
    let c = TempContent::minimal("too-large");
    c.write_bytes("dialogue/base/Huge.json", &big);
    let diagnostics = c.diagnostics();
    c.expect_file_error(&diagnostics, "dialogue/base/Huge.json", |p| {
        matches!(p, Problem::TooLarge { .. })
    });
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for open in ["[", "{\"a\":"] {
        let deep = open.repeat(100_000);
        for text in [
            deep.clone(),
            format!("{{\"FirstNode\": \"A\", \"A\": {deep}"),
        ] {
            for diagnostics in parse_both(text.as_bytes()) {
                let d = single(&diagnostics);
                assert!(
                    matches!(&d.problem, Problem::Syntax(m) if m.contains("recursion")),
                    "{d}"
                );
                assert!(d.position.is_some(), "{d}");
            }
        }
    }
    // The typed files (world, quests) go through the same strict parser first.
    let c = TempContent::minimal("deep-world");
    c.write("world.json", &"[".repeat(100_000));
    expect_error_with_position(&c, "world.json");
}

/// The folder's first diagnostic about file `relative` is an error that names a position in it.
fn expect_error_with_position(c: &TempContent, relative: &str) {
    let diagnostics = c.diagnostics();
    let d = diagnostics
        .iter()
        .find(|d| d.file == c.file(relative))
        .unwrap_or_else(|| panic!("{}", render(&diagnostics)));
    assert!(d.is_error() && d.position.is_some(), "{d}");
}

#[test]
fn a_missing_first_node_is_an_error() {
    let c = TempContent::minimal("first-node");
    c.edit("dialogue/base/Talk.json", r#""FirstNode": "Hello","#, "");
    let diagnostics = c.diagnostics();
    c.expect_file_error(&diagnostics, "dialogue/base/Talk.json", |p| {
        *p == Problem::NoFirstNode
    });
}

/// A decode error: the file parses as JSON but a node is wrong. It names node and field.
fn decode_error(node_json: &str) -> Diagnostic {
    let text = format!(r#"{{ "FirstNode": "A", "Speaker": "S", "A": {node_json} }}"#);
    let mut diagnostics = Vec::new();
    let parsed = banter_dialogue::parse_conversation_file(
        "bad/Case.json",
        text.as_bytes(),
        &mut diagnostics,
    );
    // The rest of the conversation is still returned; the broken node is left out.
    assert!(parsed.is_some_and(|f| f.nodes.is_empty()));
    single(&diagnostics).clone()
}

#[test]
fn an_unknown_field_names_node_and_field() {
    let d = decode_error(r#"{ "Text": "x", "Txet": "y" }"#);
    assert_eq!(d.problem, Problem::UnknownField("Txet".to_owned()));
    assert_eq!(
        (d.node.as_deref(), d.field.as_deref()),
        (Some("A"), Some("Txet"))
    );
    assert_eq!(
        d.to_string(),
        "error: bad/Case.json: node `A`, field `Txet`: unknown field `Txet`"
    );
    let d = decode_error(r#"{ "Responses": [ { "Text": "x", "Next": "A" } ] }"#);
    assert_eq!(d.field.as_deref(), Some("Responses[1].Next"));
}

#[test]
fn a_wrong_type_names_what_was_expected() {
    let d = decode_error(r#"{ "Text": 5 }"#);
    assert_eq!(
        d.problem,
        Problem::WrongType {
            expected: "a string",
            found: "a number"
        }
    );
    assert_eq!(d.field.as_deref(), Some("Text"));
    let d = decode_error(
        r#"{ "Text": "x", "Actions": [ { "Type": "AdvanceObjective", "QuestId": "Q", "ObjectiveId": "O", "Amount": "two" } ] }"#,
    );
    assert_eq!(d.field.as_deref(), Some("Actions[1].Amount"));
}

#[test]
fn a_node_with_two_exits_is_an_error() {
    let d = decode_error(r#"{ "Text": "x", "NextNode": "A", "Close": true }"#);
    assert!(
        matches!(&d.problem, Problem::SeveralExits(s) if s == "NextNode, Close"),
        "{d}"
    );
    assert_eq!(d.node.as_deref(), Some("A"));
}

#[test]
fn broken_typed_files_name_line_and_column() {
    let c = TempContent::minimal("typed");
    c.write("quests.json", r#"[ { "Id": "Fish", "Giver": 7 } ]"#);
    expect_error_with_position(&c, "quests.json");
}

#[test]
fn every_bad_file_at_once_still_loads_the_rest() {
    // One folder with every kind of breakage: the loader reports each and builds the good one.
    let c = TempContent::minimal("all-bad");
    c.write("dialogue/base/Malformed.json", "{ \"A\": ");
    c.write("dialogue/base/Empty.json", "");
    c.write_bytes("dialogue/base/Latin1.json", b"{\"FirstNode\": \"\xff\"}");
    c.write("dialogue/base/Deep.editor.json", &"[".repeat(100_000));
    c.write("dialogue/side/Nobody.json", r#"{ "X": { "Text": "x" } }"#);
    let (content, diagnostics) = c.load();
    assert!(content.conversations.contains_key("Talk"));
    for file in [
        "Malformed.json",
        "Empty.json",
        "Latin1.json",
        "Deep.editor.json",
    ] {
        assert!(
            diagnostics
                .iter()
                .any(|d| d.is_error() && d.file == c.file(&format!("dialogue/base/{file}"))),
            "{file}: {}",
            render(&diagnostics)
        );
    }
    assert!(
        diagnostics
            .iter()
            .any(|d| d.file == c.file("dialogue/side/Nobody.json") && d.is_error()),
        "{}",
        render(&diagnostics)
    );
}
