//! The same conversation written in both source formats builds the very same graph, so nothing
//! downstream can tell (or needs to know) which format a conversation came from.

use std::path::Path;

use banter_dialogue::layers;
use banter_dialogue::{Diagnostic, DialogueGraph};

fn build(file: &str) -> (DialogueGraph, Vec<Diagnostic>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/formats")
        .join(file);
    let bytes = std::fs::read(&path).expect("read fixture");
    let mut diagnostics = Vec::new();
    let parsed = banter_dialogue::parse_conversation_file(file, &bytes, &mut diagnostics)
        .unwrap_or_else(|| panic!("{file} parses: {diagnostics:?}"));
    let merged = layers::merge("Harbour", &parsed, &[], &mut diagnostics);
    (DialogueGraph::build(&merged, &mut diagnostics), diagnostics)
}

#[test]
fn canonical_and_editor_formats_build_equal_graphs() {
    let (canonical, d1) = build("Harbour.json");
    let (editor, d2) = build("Harbour.editor.json");
    assert!(d1.is_empty(), "{d1:?}");
    assert!(d2.is_empty(), "{d2:?}");
    assert_eq!(canonical, editor);

    // And the graph is the one the fixture describes, so the equality is not vacuous.
    let hello = canonical.find("Harbour_Hello").expect("Harbour_Hello");
    assert_eq!(canonical.first_node(), Some(hello));
    assert_eq!(canonical.speaker(), Some("Harbourmaster Quill"));
    assert_eq!(canonical.outputs(hello).len(), 3);
    let news = canonical.find("Harbour_Hello_r1").expect("response 1");
    let branch = canonical.outputs(news)[0];
    let targets: Vec<&str> = canonical
        .outputs(branch)
        .iter()
        .filter_map(|&t| canonical.vertex(t).map(|v| &*v.name))
        .collect();
    assert_eq!(targets, ["Harbour_Storm", "Harbour_Calm"]);
    let rope = canonical.find("Harbour_Hello_r2").expect("response 2");
    assert!(canonical.vertex(rope).is_some_and(|v| v.awaits_jump));
    assert!(canonical.condition(rope).is_some());
    let payloads: Vec<&str> = canonical
        .all_actions()
        .iter()
        .map(|a| &*a.payload)
        .collect();
    assert!(
        payloads.contains(&"Rope|Harbour_Thanks|Harbour_Short"),
        "{payloads:?}"
    );
    assert!(payloads.contains(&"Rope|Bring|1|home"), "{payloads:?}");
}

#[test]
fn a_stale_editor_id_falls_back_to_the_name_with_a_warning() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/Harbour.editor.json"),
    )
    .expect("read fixture");
    let stale = text.replace(
        r#""Next": { "Id": 60, "Name": "Harbour_Bye" }"#,
        r#""Next": { "Id": 99, "Name": "Harbour_Bye" }"#,
    );
    assert_ne!(stale, text);
    let mut diagnostics = Vec::new();
    let parsed = banter_dialogue::parse_conversation_file(
        "Harbour.editor.json",
        stale.as_bytes(),
        &mut diagnostics,
    )
    .expect("parses");
    assert!(
        matches!(diagnostics.as_slice(), [d] if !d.is_error() && d.node.as_deref() == Some("Harbour_Thanks")),
        "{diagnostics:?}"
    );
    let merged = layers::merge("Harbour", &parsed, &[], &mut diagnostics);
    let (canonical, _) = build("Harbour.json");
    assert_eq!(DialogueGraph::build(&merged, &mut diagnostics), canonical);
}
