//! The walk's hot path does not allocate: proven with a counting global allocator.
#![allow(unsafe_code)] // A GlobalAlloc wrapper is unsafe by definition; it only counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use banter_dialogue::{NoFacts, Walk, build_conversation, synth};
use banter_protocol::ActionType;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn advance_choose_and_take_action_do_not_allocate_once_warm() {
    let (graph, diagnostics) = build_conversation("Synth", &synth::conversation_json(3_000));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let n = |name: &str| graph.find(name).expect("vertex");
    // N1 is a linear line with a node action leading to N2, a quest check whose failure loops
    // back to N2: the steady state of a long session.
    let (mut walk, _) = Walk::open(&graph, n("N1"), &NoFacts).expect("opens");
    let lap = |walk: &mut Walk| {
        walk.jump_to(&graph, n("N1"), &NoFacts).expect("jump");
        walk.take_action(&graph, ActionType::TrackQuest, "Q1")
            .expect("armed by showing N1");
        walk.advance(&graph, n("N1"), &NoFacts).expect("advance");
        walk.choose(&graph, n("N2_r1"), &NoFacts)
            .expect("check chosen");
        walk.take_action(&graph, ActionType::CheckQuest, "Q2|N3|N2")
            .expect("armed");
        walk.jump_to(&graph, n("N2"), &NoFacts)
            .expect("failure jump");
        walk.take_action(&graph, ActionType::CompleteQuest, "Q2")
            .expect_err("never authored");
    };
    lap(&mut walk); // warm: R and the counters reach their size
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..1_000 {
        lap(&mut walk);
    }
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    assert_eq!(after - before, 0, "the walk allocated on the hot path");
}
