//! Shared helpers for the barks integration tests: a fake clock, catalogs
//! built from rows, and a player machine with its handles.
#![allow(dead_code, clippy::unwrap_used)]

use std::time::Duration;

use banter_barks::{BarkCatalog, BarkDirector, Cue, FireOutcome, LineId, Payload, SplitMix64};
use banter_player::{OwnerHandles, PlayerStateMachine};
use serde_json::{Value, json};

pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

pub fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A row with the given id and cues, text derived from the id, and extra
/// fields merged in.
pub fn row(id: &str, cues: &[Cue], extra: Value) -> Value {
    let mut v = json!({
        "id": id,
        "text": format!("line {id}"),
        "cues": cues.iter().map(|c| c.name()).collect::<Vec<_>>(),
    });
    if let (Some(obj), Value::Object(extra)) = (v.as_object_mut(), extra) {
        obj.extend(extra);
    }
    v
}

pub fn catalog_of(rows: Vec<Value>) -> BarkCatalog {
    let text = json!({ "lines": rows }).to_string();
    BarkCatalog::from_json(&text).unwrap().catalog
}

/// A catalog whose only pool is `cue`, with `n` lines `l00..`, all with
/// cooldown `cooldown_s` and priority `priority`.
pub fn pool_catalog(cue: Cue, n: usize, cooldown_s: u64, priority: u8) -> BarkCatalog {
    catalog_of(
        (0..n)
            .map(|i| {
                row(
                    &format!("l{i:02}"),
                    &[cue],
                    json!({"cooldown_s": cooldown_s, "priority": priority}),
                )
            })
            .collect(),
    )
}

pub struct World {
    pub m: PlayerStateMachine,
    pub h: OwnerHandles,
}

impl World {
    pub fn new() -> Self {
        let (m, h) = PlayerStateMachine::new();
        World { m, h }
    }
}

/// A started director over `catalog` at time `now`.
pub fn started(catalog: BarkCatalog, now: Duration, w: &World) -> BarkDirector {
    let mut d = BarkDirector::new(catalog);
    d.start(now, &w.m);
    d
}

/// The opening of most director tests: a fresh player, a director over `catalog` started at
/// 0 s, and a random source seeded with `seed`.
pub fn started_director(catalog: BarkCatalog, seed: u64) -> (World, BarkDirector, SplitMix64) {
    let w = World::new();
    let d = started(catalog, secs(0), &w);
    (w, d, SplitMix64::new(seed))
}

pub fn id(d: &BarkDirector, s: &str) -> LineId {
    d.catalog().find(s).unwrap()
}

pub fn drain(d: &mut BarkDirector) -> Vec<banter_barks::Command> {
    std::iter::from_fn(|| d.poll_command()).collect()
}

/// Fires `cue` at `at` with an empty payload, as the tests' game code does.
pub fn fire_cue(
    d: &mut BarkDirector,
    w: &World,
    at: Duration,
    cue: Cue,
    rng: &mut SplitMix64,
) -> FireOutcome {
    d.fire(at, cue, &Payload::EMPTY, &w.m, rng)
}
