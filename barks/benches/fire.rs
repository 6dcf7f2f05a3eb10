//! One `Fire(c, π)` on the real catalog: the whole filter chain, a deck peek
//! over a 9-line pool, the roll, and (about 45% of the time) a play.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use banter_barks::{BarkCatalog, BarkDirector, Cue, Payload, PayloadKey, SplitMix64};
use banter_player::{PlayerStateMachine, StoryState};
use criterion::{Criterion, criterion_group, criterion_main};

fn catalog() -> BarkCatalog {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../content/barks/catalog.json");
    BarkCatalog::from_json(&std::fs::read_to_string(path).unwrap())
        .unwrap()
        .catalog
}

fn fire(c: &mut Criterion) {
    let (mut m, h) = PlayerStateMachine::new();
    h.tags.using_bait.set(&mut m, true);
    let mut d = BarkDirector::new(catalog());
    d.start(Duration::ZERO, &m);
    let mut rng = SplitMix64::new(1);
    let payload = Payload::new().with(PayloadKey::Rarity, "Common");
    // 400 s per fire: past the 8 s spacing and the 300 s cooldowns, so
    // every fire walks the full chain to the roll.
    let mut t = Duration::ZERO;
    c.bench_function("fire LoseFish (reaches the roll)", |b| {
        b.iter(|| {
            t += Duration::from_secs(400);
            let o = d.fire(t, Cue::LoseFish, black_box(&payload), &m, &mut rng);
            if let Some(l) = o.played() {
                d.line_finished(l);
            }
            while d.poll_command().is_some() {}
            black_box(o)
        });
    });

    let mut cut = m;
    h.story.enter(&mut cut, StoryState::Cutscene);
    c.bench_function("fire during a cutscene (filter 2)", |b| {
        b.iter(|| black_box(d.fire(t, Cue::LoseFish, &payload, &cut, &mut rng)));
    });

    let mut beat = Duration::ZERO;
    let mut d2 = BarkDirector::new(catalog());
    d2.start(beat, &m);
    c.bench_function("heartbeat (idle, dwell timer)", |b| {
        b.iter(|| {
            beat += Duration::from_secs(1);
            let a = d2.heartbeat(beat, &m, &mut rng);
            if let Some(l) = a.as_ref().and_then(|a| a.outcome.played()) {
                d2.line_finished(l);
            }
            while d2.poll_command().is_some() {}
            black_box(a)
        });
    });
}

criterion_group!(benches, fire);
criterion_main!(benches);
