//! The server's per-connection and per-message costs that sit outside the store: verifying a
//! player token (once per WebSocket upgrade) and counting a message in `/metrics` (every client
//! message bumps a counter and records its handling time).
//!
//! ```sh
//! cargo bench -p banter-server --bench hot_paths
//! ```
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use banter_protocol::{ActionType, ErrorCode};
use banter_server::audit::AuditLog;
use banter_server::auth::TokenKey;
use banter_server::config::AuditConfig;
use banter_server::metrics::Metrics;
use criterion::{Criterion, criterion_group, criterion_main};

const NOW: u64 = 1_800_000_000;

fn tokens(c: &mut Criterion) {
    let key = TokenKey::new("a-bench-secret-that-is-long-enough-0000");
    let token = key.mint("player-0001", NOW, 3600);
    assert!(key.verify(&token, NOW).is_ok());
    c.bench_function("token verify (valid)", |b| {
        b.iter(|| key.verify(black_box(&token), NOW))
    });
    let wrong = TokenKey::new("another-secret-that-is-long-enough-000").mint("p", NOW, 3600);
    c.bench_function("token verify (bad signature)", |b| {
        b.iter(|| key.verify(black_box(&wrong), NOW))
    });
    c.bench_function("token mint", |b| {
        b.iter(|| key.mint(black_box("player-0001"), NOW, 3600))
    });
}

fn metrics(c: &mut Criterion) {
    let m = Metrics::default();
    c.bench_function("metrics message(\"advance\")", |b| {
        b.iter(|| m.message(black_box("advance")))
    });
    c.bench_function("metrics message(\"resume\")", |b| {
        b.iter(|| m.message(black_box("resume")))
    });
    c.bench_function("metrics rejected(code)", |b| {
        b.iter(|| m.rejected(black_box(ErrorCode::NotReachable)))
    });
    c.bench_function("metrics action_run(action)", |b| {
        b.iter(|| m.action_run(black_box(ActionType::CompleteQuest)))
    });
    c.bench_function("metrics handled(30 us)", |b| {
        b.iter(|| m.handled(black_box(Duration::from_micros(30))))
    });
    // What each runtime thread pays when both count messages at once, as a loaded server's two
    // workers do: a message counted by kind and its handling time recorded, on each of two
    // threads; the time is per message on one thread.
    c.bench_function("metrics message + handled, two threads at once", |b| {
        b.iter_custom(|iters| {
            let started = Instant::now();
            std::thread::scope(|scope| {
                for _ in 0..2 {
                    scope.spawn(|| {
                        for _ in 0..iters {
                            m.message(black_box("advance"));
                            m.handled(black_box(Duration::from_micros(30)));
                        }
                    });
                }
            });
            started.elapsed()
        })
    });
    let (audit, _queue) = AuditLog::new(&AuditConfig::default());
    let analytics = banter_server::analytics::Analytics::new(true);
    c.bench_function("metrics render", |b| {
        b.iter(|| m.render(&audit, &analytics))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = tokens, metrics
}
criterion_main!(benches);
