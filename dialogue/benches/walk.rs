//! advance, choose and take_action on a 100,000-node graph. Target: each well under 1 µs.
//! Also prints the bytes one open conversation holds.

use std::hint::black_box;

use banter_dialogue::{NoFacts, Walk, build_conversation, synth};
use banter_protocol::ActionType;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

fn walk(c: &mut Criterion) {
    let (graph, diagnostics) = build_conversation("Synth", &synth::conversation_json(100_000));
    assert!(diagnostics.is_empty());
    let n = |name: &str| graph.find(name).expect("vertex");
    let (n1, n2_r1) = (n("N50002"), n("N50003_r1"));
    let check = "Q50003|N50004|N50003";

    // A warm walk at a linear line with a node action, next to a quest check.
    let (mut warm, _) = Walk::open(&graph, n1, &NoFacts).expect("opens");
    warm.advance(&graph, n1, &NoFacts).expect("advance");
    warm.choose(&graph, n2_r1, &NoFacts).expect("choose");
    warm.jump_to(&graph, n1, &NoFacts).expect("jump");
    println!(
        "walk footprint after a check loop: {} bytes ({} reachable, heap included)",
        warm.footprint(),
        warm.reachable().len()
    );

    c.bench_function("walk/advance", |b| {
        b.iter_batched_ref(
            || warm.clone(),
            |w| black_box(w.advance(&graph, black_box(n1), &NoFacts)),
            BatchSize::SmallInput,
        )
    });
    c.bench_function("walk/choose", |b| {
        b.iter_batched_ref(
            || warm.clone(),
            |w| black_box(w.choose(&graph, black_box(n2_r1), &NoFacts)),
            BatchSize::SmallInput,
        )
    });
    c.bench_function("walk/take_action", |b| {
        b.iter_batched_ref(
            || warm.clone(),
            |w| black_box(w.take_action(&graph, ActionType::CheckQuest, black_box(check))),
            BatchSize::SmallInput,
        )
    });
    c.bench_function("walk/take_action_rejected", |b| {
        b.iter_batched_ref(
            || warm.clone(),
            |w| black_box(w.take_action(&graph, ActionType::CheckQuest, black_box("Q1|x|y"))),
            BatchSize::SmallInput,
        )
    });
    c.bench_function("walk/find_by_name", |b| {
        b.iter(|| black_box(graph.find(black_box("N50003_r1"))))
    });
}

/// Writing power against today's step, on one hub in the same run (issue 36): a response whose
/// next line is a plain `NextNode` (today's step), one into each kind of line group, and a line
/// list whose conditions read story variables and visit counts. Each from the same warm walk.
const HUB: &str = r#"{
  "FirstNode": "Hub",
  "Hub": { "Text": "What now?", "Responses": [
    { "Text": "Plain.", "NextNode": "Plain" },
    { "Text": "First.", "NextNode": { "Pick": "First", "Among": ["A", "B", "C", "D"] } },
    { "Text": "Specific.", "NextNode": { "Pick": "MostSpecific", "Among": ["A", "B", "C", "D"] } },
    { "Text": "Recent.", "NextNode": { "Pick": "LeastRecent", "Among": ["A", "B", "C", "D"] } },
    { "Text": "Weighted.", "NextNode": { "Pick": "Weighted", "Among": [ { "Node": "A", "Weight": 3 }, "B", "C", "D" ] } },
    { "Text": "Variables.", "NextNode": ["Vars", "Plain"] } ] },
  "Plain": { "Text": "plain", "NextNode": "Hub" },
  "A": { "Text": "a", "Conditions": "$Met && coins >= 10", "NextNode": "Hub" },
  "B": { "Text": "b", "Conditions": "$Mood == \"sunny\"", "NextNode": "Hub" },
  "C": { "Text": "c", "Once": true, "NextNode": "Hub" },
  "D": { "Text": "d", "NextNode": "Hub" },
  "Vars": { "Text": "v", "Conditions": "$Nets >= 3 && visits(Hub) > 1 && !visited(Plain) && opens < 9", "NextNode": "Hub" }
}"#;

fn writing_power(c: &mut Criterion) {
    use banter_protocol::{FactSheet, VarValue};
    let (graph, diagnostics) = build_conversation("Hub", HUB);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let facts = FactSheet {
        coins: 50,
        vars: [
            ("Met".to_owned(), VarValue::Bool(true)),
            ("Mood".to_owned(), VarValue::Text("sunny".into())),
            ("Nets".to_owned(), VarValue::Int(4)),
        ]
        .into(),
        visits: [
            ("Hub".to_owned(), 3),
            ("A".to_owned(), 2),
            ("B".to_owned(), 1),
        ]
        .into(),
        last_seen: [("A".to_owned(), 9), ("B".to_owned(), 4)].into(),
        opens: 2,
        seed: Some(7),
        ..FactSheet::default()
    };
    let hub = graph.find("Hub").expect("Hub");
    let (warm, _) = Walk::open(&graph, hub, &facts).expect("opens");
    for (name, response) in [
        ("writing/choose_plain_next_line (today's step)", "Hub_r1"),
        ("writing/choose_into_group_first", "Hub_r2"),
        ("writing/choose_into_group_most_specific", "Hub_r3"),
        ("writing/choose_into_group_least_recent", "Hub_r4"),
        ("writing/choose_into_group_weighted", "Hub_r5"),
        ("writing/choose_into_variables_and_visits", "Hub_r6"),
    ] {
        let r = graph.find(response).expect("response");
        c.bench_function(name, |b| {
            b.iter_batched_ref(
                || warm.clone(),
                |w| black_box(w.choose(&graph, black_box(r), &facts)),
                BatchSize::SmallInput,
            )
        });
    }
}

criterion_group!(benches, walk, writing_power);
criterion_main!(benches);
