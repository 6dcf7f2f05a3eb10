//! Narrative analytics: a query over ten million recorded steps.
//!
//! Ten million conversation steps (talks, advances, choices) are played over the sample
//! content's graphs with a fixed seed, through the server's own tally and rollup
//! (`ConversationTally`, `Analytics::conversation_ended`), in three locales, and added to the
//! store the way the server's flusher does (every 50,000 conversations, so most upserts land on
//! rows already there). Then criterion times `analytics::answer` for one conversation on SQLite
//! and on PostgreSQL, beside a `SELECT 1` round trip on the same store as the baseline measured
//! in the same run. The step log is never read: the answer's cost is the rollup rows of one
//! conversation and its quests.
//!
//! ```sh
//! cargo bench -p banter-server --bench narrative_analytics
//! BANTER_ANALYTICS_STEPS=1000000 cargo bench -p banter-server --bench narrative_analytics
//! ```
//!
//! PostgreSQL is `TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`), in a
//! schema of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use banter_dialogue::{NoFacts, Shown, Walk};
use banter_server::analytics::{Analytics, AnalyticsQuery, ConversationTally, Ending};
use banter_server::served::ContentVersion;
use banter_server::store::{self, ConnectOptions, Store};
use banter_test_db::TestDb;
use criterion::{Criterion, criterion_group, criterion_main};

const LOCALES: [&str; 3] = ["en", "ja", "ar"];
/// Conversations between two flushes.
const FLUSH_EVERY: u64 = 50_000;

/// xorshift64*: a fixed-seed source with no dependency.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Plays conversations until `steps` steps, adding the rollup to `store` as the flusher would.
/// Returns the conversations played.
async fn record_steps(
    library: &ContentVersion,
    analytics: &Analytics,
    store: &dyn Store,
    steps: u64,
) -> u64 {
    let mut names: Vec<&String> = library.conversations.keys().collect();
    names.sort();
    let mut rng = Seeded(0x5EED_0000_0021);
    let mut played = 0;
    let mut taken = 0;
    let mut now = Duration::ZERO;
    while taken < steps {
        // Earlier conversations are talked to more, as the first islands are.
        let pick = rng
            .below(names.len() as u64)
            .min(rng.below(names.len() as u64));
        let name = names[pick as usize];
        let graph = &library.conversations[name].graph;
        let Some(entry) = graph.first_node() else {
            continue;
        };
        let Ok((mut walk, _)) = Walk::open(graph, entry, &NoFacts) else {
            continue;
        };
        let mut tally = ConversationTally::opened(graph, &walk, entry, now);
        taken += 1;
        let mut line = entry;
        let how = loop {
            now += Duration::from_millis(300 + rng.below(6_000) + rng.below(6_000));
            match rng.below(100) {
                0..=3 => break Ending::Closed,
                4 => break Ending::WalkedAway,
                _ => {}
            }
            let choices: Vec<_> = walk.shown_responses(graph, line).collect();
            let shown = if choices.is_empty() {
                walk.advance(graph, line, &NoFacts)
            } else {
                // The first response is the most chosen.
                let at = rng
                    .below(choices.len() as u64)
                    .min(rng.below(choices.len() as u64));
                let response = choices[at as usize];
                let shown = walk.choose(graph, response, &NoFacts);
                if shown.is_ok() {
                    tally.chose(response);
                }
                shown
            };
            taken += 1;
            match shown {
                Ok(Shown::Line(next)) => {
                    tally.stepped(graph, &walk, Shown::Line(next), now);
                    line = next;
                }
                Ok(Shown::End) => {
                    tally.stepped(graph, &walk, Shown::End, now);
                    break Ending::Closed;
                }
                // A line waiting for the server's quest check, or one the walk refused here.
                Ok(Shown::AwaitJump) | Err(_) => break Ending::Disconnected,
            }
        };
        let events = tally.end(how, now);
        let locale = LOCALES[(played % 3) as usize];
        analytics.conversation_ended(library, name, locale, graph, &events);
        played += 1;
        if played % FLUSH_EVERY == 0 {
            assert!(analytics.flush(store).await, "flushed");
        }
    }
    assert!(analytics.flush(store).await, "flushed");
    played
}

fn bench_backend(
    c: &mut Criterion,
    runtime: &tokio::runtime::Runtime,
    label: &str,
    store: Arc<dyn Store>,
    library: &ContentVersion,
) {
    let steps: u64 = std::env::var("BANTER_ANALYTICS_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let analytics = Analytics::new(true);
    let started = Instant::now();
    let played = runtime.block_on(record_steps(library, &analytics, store.as_ref(), steps));
    let rows: usize = runtime.block_on(async {
        let mut rows = 0;
        for name in library.conversations.keys() {
            rows += store.rollups("conversation", name).await.unwrap().len();
        }
        rows
    });
    eprintln!(
        "{label}: {steps} steps in {played} conversations tallied and stored in {:.1} s \
         ({} upserts); {rows} conversation rollup rows in all",
        started.elapsed().as_secs_f64(),
        analytics.written()
    );
    let query = AnalyticsQuery {
        conversation: Some("Pim".into()),
        ..AnalyticsQuery::default()
    };
    // What the benchmarks time: one query answered from the stored rollups.
    let answer = |query: &AnalyticsQuery| {
        runtime
            .block_on(banter_server::analytics::answer(
                store.as_ref(),
                Some(library),
                query,
            ))
            .unwrap()
    };
    if let banter_server::analytics::Answer::Conversation(report) = &answer(&query) {
        eprintln!(
            "{label}: Pim has {} opens over {} lines and {} quests",
            report.opens,
            report.lines.len(),
            report.quests.len()
        );
        assert!(report.opens > 0, "the steps reached the rollup");
    }
    let mut group = c.benchmark_group(format!("analytics {label}"));
    group.bench_function("baseline: SELECT 1 round trip", |b| {
        b.iter(|| runtime.block_on(store.ping()).unwrap())
    });
    group.bench_function("report of one conversation", |b| b.iter(|| answer(&query)));
    let index = AnalyticsQuery::default();
    group.bench_function("index of every conversation", |b| b.iter(|| answer(&index)));
    group.finish();
    runtime.block_on(store.close());
}

fn narrative_analytics(c: &mut Criterion) {
    let content = Path::new(env!("CARGO_MANIFEST_DIR")).join("../content");
    let library = ContentVersion::load(&content, 1).expect("the sample content loads");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let sqlite = TestDb::sqlite("narrative_analytics");
    let store = runtime
        .block_on(store::connect(&sqlite.url(), ConnectOptions::default()))
        .expect("sqlite");
    bench_backend(c, &runtime, "sqlite", store, &library);

    let postgres = runtime.block_on(TestDb::postgres("narrative_analytics"));
    let store = runtime
        .block_on(store::connect(&postgres.url(), ConnectOptions::default()))
        .expect("postgres");
    bench_backend(c, &runtime, "postgres", store, &library);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = narrative_analytics
}
criterion_main!(benches);
