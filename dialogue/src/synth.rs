//! Synthetic conversations of any size, for benchmarks and scale tests.
//!
//! Deterministic (no random source): node `i` is a choice, a linear line with a node action, or
//! a quest check, in turn, so every shape the walk handles appears at every size.

use std::fmt::Write;

/// Canonical JSON of a conversation with `nodes` nodes (at least 1).
pub fn conversation_json(nodes: usize) -> String {
    let nodes = nodes.max(1);
    let mut out = String::with_capacity(nodes * 220);
    out.push_str("{\"FirstNode\":\"N0\",\"Speaker\":\"Synth\"");
    let name = |i: usize| format!("N{}", i % nodes);
    for i in 0..nodes {
        let _ = write!(
            out,
            ",\"N{i}\":{{\"Text\":\"Line number {i}, spoken at length.\""
        );
        if i + 1 == nodes {
            out.push_str(",\"Close\":true}");
            continue;
        }
        match i % 3 {
            0 => {
                let _ = write!(
                    out,
                    ",\"Responses\":[{{\"Text\":\"Yes.\",\"NextNode\":\"{}\",\"Actions\":[{{\"Type\":\"AcceptQuest\",\"QuestId\":\"Q{i}\"}}]}},{{\"Text\":\"No.\",\"NextNode\":\"{}\"}}]}}",
                    name(i + 1),
                    name(i + 2)
                );
            }
            1 => {
                let _ = write!(
                    out,
                    ",\"NextNode\":\"{}\",\"Actions\":[{{\"Type\":\"TrackQuest\",\"QuestId\":\"Q{i}\"}}]}}",
                    name(i + 1)
                );
            }
            _ => {
                let _ = write!(
                    out,
                    ",\"Responses\":[{{\"Text\":\"Done?\",\"Actions\":[{{\"Type\":\"CheckQuest\",\"QuestId\":\"Q{i}\",\"SuccessNode\":\"{}\",\"FailureNode\":\"{}\"}}]}},{{\"Text\":\"Later.\",\"NextNode\":\"{}\"}}]}}",
                    name(i + 1),
                    name(i),
                    name(i + 1)
                );
            }
        }
    }
    out.push('}');
    out
}
