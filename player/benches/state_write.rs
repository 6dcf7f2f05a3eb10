//! A state write with its effective-state refresh. Target: well under a microsecond.

use std::hint::black_box;

use banter_player::{BoatState, FishingState, OwnerHandles, PlayerStateMachine, StoryState};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};

fn state_write(c: &mut Criterion) {
    let mut group = c.benchmark_group("state_write");

    // Every write is a real change that moves the effective state (Charging <-> Casted over
    // Boat.Driving), so each iteration pays the write, the revision bump and the refresh.
    alternate_fishing_phases(&mut group, "enter_moves_effective", |m, h| {
        h.boat.enter(m, BoatState::Driving);
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
    alternate_fishing_phases(&mut group, "enter_under_cutscene", |m, h| {
        h.story.enter(m, StoryState::Cutscene);
    });

    // The no-op write: entering the state already held.
    group.bench_function("enter_no_op", |b| {
        let (mut m, h) = PlayerStateMachine::new();
        h.fishing.enter(&mut m, FishingState::Casted);
        b.iter(|| black_box(h.fishing.enter(black_box(&mut m), FishingState::Casted)));
    });

    group.finish();
}

/// Benchmarks `name`: Fishing.Charging and Fishing.Casted written in turn, each a real change,
/// on a machine first put in the state `setup` writes.
fn alternate_fishing_phases(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    setup: impl Fn(&mut PlayerStateMachine, &OwnerHandles),
) {
    group.bench_function(name, |b| {
        let (mut m, h) = PlayerStateMachine::new();
        setup(&mut m, &h);
        let phases = [FishingState::Charging, FishingState::Casted];
        let mut i = 0usize;
        b.iter(|| {
            i ^= 1;
            black_box(h.fishing.enter(black_box(&mut m), black_box(phases[i])))
        });
    });
}

criterion_group!(benches, state_write);
criterion_main!(benches);
