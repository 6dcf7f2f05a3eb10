//! Connect churn: upgrades at a fixed rate (1,000/s by default) from a pool of players, each
//! closed at once; a fraction with garbage tokens, every one of which must be refused.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use super::AbuseOptions;
use super::dial::{Dialer, TokenVia, Upgrade};
use super::figures::{Samples, Spread, Tally, add, get};
use super::schedule::{Ran, is_garbage, open_loop};
use crate::auth::{mint, tampered, unix_now, unsigned};

/// A garbage token for churn upgrade `k`: never signed with the server's secret, always safe
/// in a query string. Several shapes, so the server's parser sees more than one kind of junk.
pub fn garbage_token(k: u64, secret: &str) -> String {
    let now = unix_now();
    match k % 4 {
        0 => format!("garbage-{k}"),
        1 => unsigned(&format!("abuse-churn-{k}"), now),
        2 => tampered(&mint(secret, &format!("abuse-churn-{k}"), now, now + 3600)),
        _ => "eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.AAAA".to_owned(),
    }
}

/// What the connect churn did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ChurnReport {
    pub target_per_sec: f64,
    pub pool: usize,
    pub garbage_fraction: f64,
    pub attempted: u64,
    pub completed: u64,
    pub achieved_per_sec: f64,
    /// Due upgrades not started because `--churn-in-flight` were still waiting.
    pub skipped_client_behind: u64,
    /// Valid tokens: `101`, other statuses, failures.
    pub valid: BTreeMap<String, u64>,
    /// Garbage tokens: every one must be `401`.
    pub garbage: BTreeMap<String, u64>,
    pub garbage_admitted: u64,
    /// Milliseconds from connect to `101`, valid tokens.
    pub upgrade_ms: Spread,
}

/// The churn's counters while it runs.
#[derive(Default)]
pub(super) struct Live {
    pub(super) completed: AtomicU64,
    garbage_admitted: AtomicU64,
    valid: Tally,
    garbage: Tally,
    upgrade_ms: Samples,
}

/// Upgrade number `k`, closed at once if it got a session.
async fn one(dialer: Arc<Dialer>, k: u64, pool: usize, fraction: f64, live: Arc<Live>) {
    let garbage = is_garbage(k, fraction);
    let token = if garbage {
        garbage_token(k, &dialer.secret)
    } else {
        dialer.token(&format!("abuse-churn-{}", k % pool as u64))
    };
    let started = Instant::now();
    let outcome = dialer
        .upgrade(k as usize, &token, TokenVia::Query, None)
        .await;
    let tally = if garbage { &live.garbage } else { &live.valid };
    tally.add(outcome.label());
    if let Upgrade::Accepted(ws) = outcome {
        let mut ws = *ws;
        if garbage {
            add(&live.garbage_admitted);
        } else {
            live.upgrade_ms
                .push(started.elapsed().as_secs_f64() * 1000.0);
        }
        // An immediate close: the Close frame, no waiting for the welcome.
        let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(None)).await;
    }
    add(&live.completed);
}

/// Churns at `options.churn_rate` until the deadline.
pub(super) async fn run(
    dialer: Arc<Dialer>,
    options: &AbuseOptions,
    live: Arc<Live>,
) -> ChurnReport {
    let (pool, fraction) = (options.churn_pool, options.churn_garbage);
    let ran = if options.churn_rate > 0.0 {
        let live = live.clone();
        let deadline = dialer.deadline;
        open_loop(
            options.churn_rate,
            options.churn_in_flight,
            deadline,
            move |k| one(dialer.clone(), k, pool, fraction, live.clone()),
        )
        .await
    } else {
        Ran::default()
    };
    let completed = get(&live.completed);
    ChurnReport {
        target_per_sec: options.churn_rate,
        pool,
        garbage_fraction: fraction,
        attempted: ran.attempted,
        completed,
        achieved_per_sec: ran.per_sec(completed),
        skipped_client_behind: ran.skipped,
        valid: live.valid.take(),
        garbage: live.garbage.take(),
        garbage_admitted: get(&live.garbage_admitted),
        upgrade_ms: live.upgrade_ms.spread(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abuse::dial::upgrade_request;
    use crate::auth::DEV_SECRET;

    #[test]
    fn garbage_tokens_are_never_valid_and_fit_a_query() {
        for k in 0..8 {
            let token = garbage_token(k, DEV_SECRET);
            assert!(!token.is_empty());
            assert!(
                token
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
                "{token}"
            );
            assert!(upgrade_request("h:1", &token, TokenVia::Query).is_ok());
        }
    }
}
