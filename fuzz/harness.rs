//! What each fuzz target does with its input, shared by the libFuzzer targets and by
//! `dialogue/tests/fuzz_corpus.rs`, which replays the committed corpus on stable in CI.
//!
//! Every function must return normally for any input: a panic is a bug (the loader and the
//! parsers promise a typed error for bad input, never a crash).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use banter_dialogue::content::Content;
use banter_dialogue::export;
use banter_dialogue::layers::{self, Layer};
use banter_dialogue::{Condition, DialogueGraph, NoFacts, VertexId};
use banter_protocol::{ActionPayload, ActionType, ClientMessage};

/// Bytes as a conversation file in both formats: parse, merge (alone, and as a layer over
/// itself so patches apply), build the graph, run the content checks, export both pictures.
pub fn content_loader(bytes: &[u8]) {
    for file in ["fuzz/Case.json", "fuzz/Case.editor.json"] {
        let mut diagnostics = Vec::new();
        let Some(parsed) = banter_dialogue::parse_conversation_file(file, bytes, &mut diagnostics)
        else {
            assert!(
                banter_dialogue::has_errors(&diagnostics),
                "a file that does not parse must say why"
            );
            continue;
        };
        let merged = layers::merge("Case", &parsed, &[], &mut diagnostics);
        let layered = layers::merge(
            "Case",
            &parsed,
            &[(Layer::Story, &parsed)],
            &mut diagnostics,
        );
        let graph = DialogueGraph::build(&merged, &mut diagnostics);
        let _ = DialogueGraph::build(&layered, &mut diagnostics);
        graph_is_consistent(&graph);

        let _ = export::to_dot(&graph);
        let _ = export::to_mermaid(&graph);

        let content = Content {
            merged: BTreeMap::from([("Case".to_owned(), merged)]),
            conversations: BTreeMap::from([("Case".to_owned(), Arc::new(graph))]),
            ..Content::default()
        };
        diagnostics.extend(banter_dialogue::check::check(&content));
        for d in &diagnostics {
            let _ = d.to_string();
        }
    }
}

/// Every edge and action of a built graph points inside it.
fn graph_is_consistent(graph: &DialogueGraph) {
    assert!(
        graph.vertex(VertexId::ROOT).is_some(),
        "a graph always has its root"
    );
    for (id, v) in graph.vertices() {
        for out in graph.outputs(id) {
            assert!(out.index() < graph.len(), "edge out of range");
        }
        for (_, action) in graph.actions(id) {
            assert_eq!(action.vertex, id);
        }
        if id != VertexId::ROOT {
            assert!(
                graph.find(&v.name).is_some(),
                "vertex `{}` has no name entry",
                v.name
            );
        }
    }
}

/// The first byte picks an action type, the rest is its payload. Parsing is strict, so whatever
/// parses must build back to the very same bytes.
pub fn payload_parser(bytes: &[u8]) {
    let Some((&first, rest)) = bytes.split_first() else {
        return;
    };
    let action_type = ActionType::ALL[usize::from(first) % ActionType::ALL.len()];
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if let Ok(action) = ActionPayload::parse(action_type, text) {
        assert_eq!(action.action_type(), action_type);
        assert_eq!(ActionPayload::build(&action), text, "build(parse(s)) != s");
    }
}

/// A condition expression: parse, and if it parses, evaluate it and visit its references.
pub fn condition(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    if let Ok(condition) = Condition::parse(text) {
        let _ = condition.eval(&NoFacts);
        condition.visit_references(&mut |_| {});
    }
}

/// Bytes as a WebSocket text frame (WebSocket text is UTF-8, so other bytes never reach the
/// decoder): decoding never panics, and a message that decodes survives encode-and-decode
/// unchanged, so what the server logs and audits is what the client sent.
pub fn frame_decoder(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    match ClientMessage::decode(text) {
        Ok(message) => {
            // The decoder's fast path (`type` first) decodes exactly as serde's derive would.
            let general = serde_json::from_str::<ClientMessage>(text).ok();
            assert_eq!(
                general.as_ref(),
                Some(&message),
                "fast path differs on {text:?}"
            );
            let encoded = serde_json::to_string(&message).expect("a decoded message encodes");
            let again = ClientMessage::decode(&encoded).expect("an encoded message decodes");
            assert_eq!(again, message, "encode then decode changed {text:?}");
            assert_eq!(again.id(), message.id());
        }
        Err(error) => assert!(!error.message.is_empty(), "a refusal says why"),
    }
}

/// Bytes as a conversation file handed to the line tagger, in both formats: it tags or refuses
/// with where; what it writes parses as JSON again, tagging it again adds nothing, and every
/// byte of the input is still there in order (the tagger only inserts).
pub fn line_tagger(bytes: &[u8]) {
    use banter_dialogue::lines::{Format, tag_file};
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    for format in [Format::Canonical, Format::Editor] {
        let mut taken = std::collections::HashSet::new();
        let Ok((tagged, added)) = tag_file("fuzz/Case.json", text, format, &mut taken) else {
            continue;
        };
        if added == 0 {
            assert_eq!(tagged, text, "nothing to add changes nothing");
            continue;
        }
        assert!(
            serde_json::from_str::<serde_json::Value>(&tagged).is_ok()
                || serde_json::from_str::<serde_json::Value>(text).is_err(),
            "tagging valid JSON keeps it valid"
        );
        let mut rest = tagged.as_str();
        for c in text.chars() {
            match rest.find(c) {
                Some(at) => rest = &rest[at + c.len_utf8()..],
                None => panic!("the tagger dropped {c:?}"),
            }
        }
        let (again, more) =
            tag_file("fuzz/Case.json", &tagged, format, &mut taken).expect("tagged text scans");
        assert_eq!(
            (again.as_str(), more),
            (tagged.as_str(), 0),
            "tagging is idempotent"
        );
    }
}

/// Bytes as a string table: read or refused with a typed error, never a panic (polib slices
/// lines unchecked, so the reader checks them first).
pub fn string_table(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let locale = banter_dialogue::locale::Locale::parse("ja").expect("a valid tag");
    if let Err(e) = banter_dialogue::locale::table::read("fuzz/ja.po", locale, text) {
        let _ = e.to_string();
    }
}
