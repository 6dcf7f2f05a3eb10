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

criterion_group!(benches, walk);
criterion_main!(benches);
