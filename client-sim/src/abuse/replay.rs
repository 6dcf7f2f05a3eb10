//! Token replay: tokens that expired (some after being used once while valid) and tokens signed
//! with another secret, at volume, in the query string and in the header; every one must be
//! refused with 401.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use super::AbuseOptions;
use super::dial::{Dialer, TokenVia, Upgrade};
use super::figures::{add, get};
use super::schedule::open_loop;
use crate::auth::{mint, unix_now};

/// A secret that is not the server's, for tokens that must be refused.
const FOREIGN_SECRET: &str = "abuse-foreign-secret-not-the-servers-0123456789";
/// Short-lived tokens used while valid, then replayed once they expired.
const SHORT_LIVED: usize = 8;
/// Their lifetime, in seconds: long enough to be used once under load, short enough to expire
/// early in the run.
const SHORT_LIFETIME: u64 = 3;
/// Replayed upgrades in flight at most.
const IN_FLIGHT: usize = 64;
/// How long the server still takes a token after its `exp` (docs/PROTOCOL.md section 2, for
/// minters whose clock runs a little behind): a replayed token expired longer ago than that.
pub const LEEWAY_SECS: u64 = 5;

/// What a replayed token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayKind {
    /// Signed by the server's secret, expired long ago.
    LongExpired,
    /// One of the short-lived tokens that got a session at the start, replayed after `exp` and
    /// the leeway.
    JustExpired,
    /// Signed with another secret, not expired.
    ForeignSecret,
}

impl ReplayKind {
    pub fn name(self) -> &'static str {
        match self {
            ReplayKind::LongExpired => "expired_long_ago",
            ReplayKind::JustExpired => "used_then_expired",
            ReplayKind::ForeignSecret => "foreign_secret",
        }
    }

    /// The kind of replay `k`, and whether it goes in the header (otherwise the query): every
    /// kind both ways.
    pub fn at(k: u64) -> (ReplayKind, TokenVia) {
        let kind = match k % 3 {
            0 => ReplayKind::LongExpired,
            1 => ReplayKind::JustExpired,
            _ => ReplayKind::ForeignSecret,
        };
        let via = if (k / 3).is_multiple_of(2) {
            TokenVia::Query
        } else {
            TokenVia::Header
        };
        (kind, via)
    }
}

/// A token signed with the server's secret that expired between 1 s and an hour before `now`,
/// past the leeway.
pub fn expired_token(secret: &str, player: &str, k: u64, now: u64) -> String {
    let exp = now.saturating_sub(LEEWAY_SECS + 1 + k % 3600);
    mint(secret, player, exp.saturating_sub(3600), exp)
}

/// A token for the next hour signed with a secret the server does not have.
pub fn foreign_token(player: &str, now: u64) -> String {
    mint(FOREIGN_SECRET, player, now, now + 3600)
}

/// What the token replay got.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplayReport {
    pub target_per_sec: f64,
    /// Short-lived tokens used once while valid, then replayed after expiry.
    pub short_lived_tokens: usize,
    pub short_lived_accepted_while_valid: u64,
    pub attempted: u64,
    pub achieved_per_sec: f64,
    pub skipped_client_behind: u64,
    /// Per kind of token, the answers (`401` expected).
    pub answers: BTreeMap<String, BTreeMap<String, u64>>,
    /// Refused tokens that got a session anyway: must be 0.
    pub admitted: u64,
}

/// The replay's counters while it runs.
#[derive(Default)]
pub(super) struct Live {
    pub(super) admitted: AtomicU64,
    answers: Mutex<BTreeMap<String, BTreeMap<String, u64>>>,
}

impl Live {
    fn answer(&self, kind: ReplayKind, answer: String) {
        if let Ok(mut map) = self.answers.lock() {
            *map.entry(kind.name().to_owned())
                .or_default()
                .entry(answer)
                .or_insert(0) += 1;
        }
    }
}

/// The short-lived tokens and their common expiry.
struct ShortLived {
    tokens: Vec<String>,
    exp: u64,
}

/// Replay number `k`.
async fn one(dialer: Arc<Dialer>, k: u64, short: Arc<ShortLived>, live: Arc<Live>) {
    let (mut kind, via) = ReplayKind::at(k);
    let now = unix_now();
    let player = format!("abuse-replay-{}", k % 1000);
    // A second past `exp` and the leeway, so neither clock's rounding can make it valid; until
    // then (or with no short-lived token) the slot replays a long-expired one.
    let just_expired = if now > short.exp + LEEWAY_SECS {
        short.tokens.get((k as usize) % short.tokens.len().max(1))
    } else {
        None
    };
    let token = match (kind, just_expired) {
        (ReplayKind::JustExpired, Some(token)) => token.clone(),
        (ReplayKind::ForeignSecret, _) => foreign_token(&player, now),
        _ => {
            kind = ReplayKind::LongExpired;
            expired_token(&dialer.secret, &player, k, now)
        }
    };
    let outcome = dialer.upgrade(k as usize, &token, via, None).await;
    live.answer(kind, outcome.label());
    if let Upgrade::Accepted(ws) = outcome {
        let mut ws = *ws;
        add(&live.admitted);
        let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(None)).await;
    }
}

/// Replays at `options.replay_rate` until the deadline.
pub(super) async fn run(
    dialer: Arc<Dialer>,
    options: &AbuseOptions,
    live: Arc<Live>,
) -> ReplayReport {
    let mut report = ReplayReport {
        target_per_sec: options.replay_rate,
        ..ReplayReport::default()
    };
    if options.replay_rate <= 0.0 {
        return report;
    }
    // The short-lived tokens get a session each while valid, so what is replayed later is a
    // token the server once accepted.
    let now = unix_now();
    let exp = now + SHORT_LIFETIME;
    let mut tokens = Vec::with_capacity(SHORT_LIVED);
    for j in 0..SHORT_LIVED {
        let token = mint(&dialer.secret, &format!("abuse-replay-short-{j}"), now, exp);
        if let Upgrade::Accepted(ws) = dialer.upgrade(j, &token, TokenVia::Query, None).await {
            let mut ws = *ws;
            report.short_lived_accepted_while_valid += 1;
            let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(None)).await;
        }
        tokens.push(token);
    }
    report.short_lived_tokens = tokens.len();
    let short = Arc::new(ShortLived { tokens, exp });
    let deadline = dialer.deadline;
    let ran = {
        let live = live.clone();
        open_loop(options.replay_rate, IN_FLIGHT, deadline, move |k| {
            one(dialer.clone(), k, short.clone(), live.clone())
        })
        .await
    };
    report.attempted = ran.attempted;
    report.skipped_client_behind = ran.skipped;
    report.achieved_per_sec = ran.per_sec(ran.attempted);
    report.answers = live.answers.lock().map(|m| m.clone()).unwrap_or_default();
    report.admitted = get(&live.admitted);
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::DEV_SECRET;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn claims(token: &str) -> serde_json::Value {
        let part = token.split('.').nth(1).expect("claims");
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("base64")).expect("json")
    }

    #[test]
    fn replayed_tokens_are_expired_or_foreign() {
        let now = 1_800_000_000;
        for k in 0..5000 {
            let token = expired_token(DEV_SECRET, "p", k, now);
            let exp = claims(&token)["exp"].as_u64().expect("exp");
            assert!(
                exp + LEEWAY_SECS < now,
                "k {k}: exp {exp} within the leeway"
            );
            assert!(exp + LEEWAY_SECS + 3600 >= now, "k {k}: exp {exp}");
        }
        let foreign = foreign_token("p", now);
        assert!(claims(&foreign)["exp"].as_u64().expect("exp") > now);
        assert_ne!(foreign, mint(DEV_SECRET, "p", now, now + 3600));
        // Every kind goes both ways.
        let seen: std::collections::HashSet<_> = (0..6)
            .map(|k| {
                let (kind, via) = ReplayKind::at(k);
                (kind.name(), via == TokenVia::Header)
            })
            .collect();
        assert_eq!(seen.len(), 6);
    }
}
