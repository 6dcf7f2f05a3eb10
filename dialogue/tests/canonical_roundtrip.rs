//! A merged conversation written with `canonical::to_json` builds the same graph again: what the
//! server sends a client is exactly what the server walks.

use std::path::Path;

use banter_dialogue::content::Content;
use banter_dialogue::{DialogueGraph, canonical, layers, synth};

fn rebuild(conversation: &banter_dialogue::Conversation) -> DialogueGraph {
    let json = canonical::to_json(conversation);
    let mut d = Vec::new();
    let file = canonical::parse_conversation_with_limit(
        &conversation.name,
        json.as_bytes(),
        u64::MAX,
        &mut d,
    )
    .expect("parses");
    let merged = layers::merge(&conversation.name, &file, &[], &mut d);
    // Everything but a line's `Direction`, a note for the voice actor that goes to the
    // recording script and never to a client.
    let mut sent = conversation.nodes.clone();
    sent.values_mut().for_each(|node| node.direction = None);
    assert_eq!(merged.nodes, sent);
    assert_eq!(merged.shared, conversation.shared);
    let graph = DialogueGraph::build(&merged, &mut d);
    assert!(d.iter().all(|x| !x.is_error()), "{d:?}");
    graph
}

#[test]
fn sample_conversations_round_trip_through_the_canonical_writer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../content");
    let (content, _) = Content::load(&root);
    assert!(!content.merged.is_empty(), "the sample content loads");
    for (name, merged) in &content.merged {
        let graph = rebuild(merged);
        assert_eq!(
            &graph,
            &**content.conversation(name).expect("built"),
            "{name}"
        );
    }
}

#[test]
fn synthetic_conversations_round_trip_through_the_canonical_writer() {
    let json = synth::conversation_json(500);
    let mut d = Vec::new();
    let file = canonical::parse_conversation("Synth", json.as_bytes(), &mut d).expect("parses");
    let merged = layers::merge("Synth", &file, &[], &mut d);
    let original = DialogueGraph::build(&merged, &mut d);
    assert_eq!(rebuild(&merged), original);
}

#[test]
fn shared_and_choice_round_trip_as_written_with_sorted_keys() {
    let json = r#"{
      "FirstNode": "Boat", "Speaker": "Wren",
      "Shared": { "Tie": "Leader", "TimeLimit": 20, "Mode": "Majority" },
      "Boat": { "Text": "Which boat?", "Choice": { "Mode": "Roll" }, "Responses": [
        { "Text": "The small one.", "NextNode": "Off" }, { "Text": "The big one.", "NextNode": "Off" } ] },
      "Off": { "Text": "Off we go.", "Close": true }
    }"#;
    let mut d = Vec::new();
    let file = canonical::parse_conversation("Ferry", json.as_bytes(), &mut d).expect("parses");
    let merged = layers::merge("Ferry", &file, &[], &mut d);
    assert!(d.is_empty(), "{d:?}");
    let written = canonical::to_json(&merged);
    assert!(
        written.contains(r#""Shared":{"Mode":"Majority","Tie":"Leader","TimeLimit":20}"#),
        "{written}"
    );
    assert!(written.contains(r#""Choice":{"Mode":"Roll"}"#), "{written}");
    let original = DialogueGraph::build(&merged, &mut d);
    let again = rebuild(&merged);
    assert_eq!(again, original);
    assert!(again.shared().is_some());
    // A conversation that says nothing writes nothing.
    let (plain, _) = banter_dialogue::build_conversation(
        "Plain",
        r#"{ "FirstNode": "A", "A": { "Text": "a", "Close": true } }"#,
    );
    assert_eq!(plain.shared(), None);
}
