//! Synthetic conversations build without a single diagnostic at every size the benchmarks use.

use banter_dialogue::{build_conversation, synth};

#[test]
fn synthetic_conversations_are_clean() {
    for nodes in [1, 2, 3, 10, 1_000, 100_000] {
        let (graph, diagnostics) = build_conversation("Synth", &synth::conversation_json(nodes));
        assert!(
            diagnostics.is_empty(),
            "{nodes}: {:?}",
            &diagnostics[..diagnostics.len().min(3)]
        );
        assert!(graph.len() > nodes);
    }
}
