//! A state write with its effective-state refresh. Target: well under a microsecond.

use std::hint::black_box;

use banter_player::{BoatState, FishingState, PlayerStateMachine, StoryState};
use criterion::{Criterion, criterion_group, criterion_main};

fn state_write(c: &mut Criterion) {
    let mut group = c.benchmark_group("state_write");

    // Every write is a real change that moves the effective state (Charging <-> Casted over
    // Boat.Driving), so each iteration pays the write, the revision bump and the refresh.
    group.bench_function("enter_moves_effective", |b| {
        let (mut m, h) = PlayerStateMachine::new();
        h.boat.enter(&mut m, BoatState::Driving);
        let phases = [FishingState::Charging, FishingState::Casted];
        let mut i = 0usize;
        b.iter(|| {
            i ^= 1;
            black_box(h.fishing.enter(black_box(&mut m), black_box(phases[i])))
        });
    });

    // The derived transition: clear Fishing while sailing, then cast again.
    group.bench_function("clear_then_enter_derived", |b| {
        let (mut m, h) = PlayerStateMachine::new();
        h.boat.enter(&mut m, BoatState::Driving);
        b.iter(|| {
            black_box(h.fishing.enter(black_box(&mut m), FishingState::Casted));
            black_box(h.fishing.clear(black_box(&mut m)))
        });
    });

    // A real change hidden under a heavier state: write and refresh, no announcement.
    group.bench_function("enter_under_cutscene", |b| {
        let (mut m, h) = PlayerStateMachine::new();
        h.story.enter(&mut m, StoryState::Cutscene);
        let phases = [FishingState::Charging, FishingState::Casted];
        let mut i = 0usize;
        b.iter(|| {
            i ^= 1;
            black_box(h.fishing.enter(black_box(&mut m), black_box(phases[i])))
        });
    });

    // The no-op write: entering the state already held.
    group.bench_function("enter_no_op", |b| {
        let (mut m, h) = PlayerStateMachine::new();
        h.fishing.enter(&mut m, FishingState::Casted);
        b.iter(|| black_box(h.fishing.enter(black_box(&mut m), FishingState::Casted)));
    });

    group.finish();
}

criterion_group!(benches, state_write);
criterion_main!(benches);
