//! What the tools print: a table for people or a JSON object for machines on stdout, and
//! progress bars on stderr.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};
use serde::Serialize;

/// Prints a tool's report on stdout: pretty JSON with `--json`, else the table for people.
pub fn print(
    json: bool,
    report: &impl Serialize,
    table: impl FnOnce() -> String,
) -> serde_json::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print!("{}", table());
    }
    Ok(())
}

/// A progress bar on stderr in indicatif's `template`, drawn only when stderr is a terminal
/// (never with `show` false), and cleared when the last handle to it is dropped.
pub fn progress_bar(len: u64, template: &str, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr())
        .with_finish(ProgressFinish::AndClear);
    // A template that does not parse is a programming error; the default style still works.
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("#>."));
    }
    bar
}

/// Round-trip percentiles, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Latency {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: u64,
}

/// The round trips of one kind of request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KindLatency {
    pub messages: u64,
    #[serde(flatten)]
    pub latency: Latency,
}

impl KindLatency {
    /// The count and percentiles of an HDR histogram of round trips in microseconds.
    pub fn from_histogram(h: &Histogram<u64>) -> KindLatency {
        KindLatency {
            messages: h.len(),
            latency: Latency::from_histogram(h),
        }
    }

    /// `N msgs, p50 .., p99 .., max ..`, with `what` after the count.
    fn summary(&self, what: &str) -> String {
        format!(
            "{} msgs{what}, p50 {}, p99 {}, max {}",
            self.messages,
            micros(self.latency.p50),
            micros(self.latency.p99),
            micros(self.latency.max)
        )
    }
}

impl Latency {
    /// The percentiles of an HDR histogram of round trips recorded in microseconds.
    pub fn from_histogram(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean().round() as u64,
        }
    }
}

/// The load test's result.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoadReport {
    pub bots: usize,
    pub duration_s: f64,
    pub read_pace: bool,
    /// Requests sent and answered (each with an `ack` or `error`).
    pub messages: u64,
    pub messages_per_sec: f64,
    pub latency_us: Latency,
    /// The round trips by request kind (`move`, `talk`, `action AcceptQuest`, ...).
    pub latency_by_kind_us: BTreeMap<String, KindLatency>,
    /// Requests sent after the deadline (the bots closing what they had open, all at once):
    /// answered and checked like the rest, but not in `latency_us` or `latency_by_kind_us`.
    pub wind_down_us: KindLatency,
    /// Requests the server refused: an honest bot must get none.
    pub rejections: u64,
    pub rejections_by_code: BTreeMap<String, u64>,
    /// Requests without an answer, failed logins and events, client-side failures.
    pub errors: u64,
    pub error_samples: Vec<String>,
    pub quests_completed: u64,
    pub conversations: u64,
    pub events_posted: u64,
    pub reconnects: u64,
    /// What the server acknowledged, per player (`--acknowledged-out`), for checking against the
    /// database after a fault. Not in the JSON report.
    #[serde(skip)]
    pub acknowledged: Vec<(String, crate::session::Acknowledged)>,
    /// With `--game-servers`: how they reached the server (`http` or `ws`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// With `--game-servers` over HTTP: each game server's request budget, per minute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_per_minute_budget: Option<f64>,
    /// With `--game-servers`: each one's channel, as it measured it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub game_servers: Vec<GameServerReport>,
    /// With `--party-size`: the parties, their shared conversations and payouts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parties: Option<crate::party::PartyReport>,
}

/// One simulated game server's channel over a load run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GameServerReport {
    pub name: String,
    pub channel: String,
    pub players: usize,
    /// HTTP requests (batches, retries included) or WebSocket frames sent.
    pub requests: u64,
    pub retries: u64,
    /// Over the channel's whole life, from its opening to its close.
    pub requests_per_minute: f64,
    /// The most requests started within any 60 s.
    pub peak_requests_per_minute: u64,
    pub items: u64,
    pub positions: u64,
    pub events: u64,
    /// Each item's latency from being queued to its answer event (`ack`, `error`, a join's
    /// `welcome`); `messages` counts the items answered.
    pub latency_us: KindLatency,
    /// `error` events, by code: an honest game server gets none.
    pub rejections: u64,
    pub rejections_by_code: BTreeMap<String, u64>,
    /// `quest_completed` effects on the channel.
    pub quests_paid: u64,
    /// Quests its bots saw completed (the same effects, as the bots counted them).
    pub quests_completed: u64,
    /// Catches and finds its bots reported to `/internal/events` (not channel requests).
    pub events_posted: u64,
    pub errors: u64,
    pub error_samples: Vec<String>,
}

impl GameServerReport {
    /// Adds what the channel measured.
    pub fn absorb(&mut self, stats: crate::channel::ChannelStats) {
        self.channel = stats.channel.clone();
        self.requests = stats.requests;
        self.retries = stats.retries;
        self.requests_per_minute = (stats.requests_per_minute() * 10.0).round() / 10.0;
        self.peak_requests_per_minute = stats.peak_requests_per_minute;
        self.items = stats.items;
        self.positions = stats.positions;
        self.events = stats.events;
        self.latency_us = KindLatency::from_histogram(&stats.latency);
        self.rejections = stats.rejections.values().sum();
        self.rejections_by_code = stats.rejections;
        self.quests_paid = stats.quests_paid;
        self.errors += stats.errors;
        for sample in stats.error_samples {
            if self.error_samples.len() < 5 {
                self.error_samples.push(sample);
            }
        }
    }

    pub fn clean(&self) -> bool {
        self.rejections == 0 && self.errors == 0
    }
}

impl LoadReport {
    /// The acknowledged rewards and objective progress as one JSON document:
    /// `{"rewards":[{"player","quest","coins"}],"progress":[{"player","quest","objective","progress"}]}`.
    pub fn acknowledged_json(&self) -> serde_json::Value {
        let mut rewards = Vec::new();
        let mut progress = Vec::new();
        for (player, acknowledged) in &self.acknowledged {
            for (quest, coins) in &acknowledged.rewards {
                rewards.push(serde_json::json!({"player": player, "quest": quest, "coins": coins}));
            }
            for ((quest, objective), value) in &acknowledged.progress {
                progress.push(serde_json::json!({
                    "player": player, "quest": quest, "objective": objective, "progress": value,
                }));
            }
        }
        serde_json::json!({ "rewards": rewards, "progress": progress })
    }
}

impl LoadReport {
    /// True when nothing was refused and nothing failed (on any game server's channel either).
    pub fn clean(&self) -> bool {
        self.rejections == 0
            && self.errors == 0
            && self.game_servers.iter().all(|g| g.clean())
            && self.parties.as_ref().is_none_or(|p| p.clean())
    }

    /// The game servers' table: one row each.
    pub fn game_servers_table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .game_servers
            .iter()
            .map(|g| {
                let codes: Vec<String> = g
                    .rejections_by_code
                    .iter()
                    .map(|(code, n)| format!("{n} {code}"))
                    .collect();
                vec![
                    g.name.clone(),
                    g.players.to_string(),
                    g.requests.to_string(),
                    format!("{:.1}", g.requests_per_minute),
                    g.peak_requests_per_minute.to_string(),
                    g.latency_us.messages.to_string(),
                    micros(g.latency_us.latency.p50),
                    micros(g.latency_us.latency.p99),
                    if codes.is_empty() {
                        "0".to_owned()
                    } else {
                        codes.join(", ")
                    },
                    g.quests_paid.to_string(),
                    g.errors.to_string(),
                ]
            })
            .collect();
        let mut out = table(
            &[
                "game server",
                "players",
                "requests",
                "req/min",
                "peak/60s",
                "items",
                "p50",
                "p99",
                "rejections",
                "quests paid",
                "errors",
            ],
            &rows,
        );
        let worst = |f: fn(&GameServerReport) -> u64| self.game_servers.iter().map(f).max();
        let transport = self.transport.as_deref().unwrap_or("?");
        let _ = writeln!(
            out,
            "\n{} game servers over {transport}{}: peak {} requests in 60 s, worst p50 {}, \
             worst p99 {}, {} rejections, {} quests paid",
            self.game_servers.len(),
            self.requests_per_minute_budget
                .map(|b| format!(" (budget {b:.0} requests/min each)"))
                .unwrap_or_default(),
            worst(|g| g.peak_requests_per_minute).unwrap_or(0),
            micros(worst(|g| g.latency_us.latency.p50).unwrap_or(0)),
            micros(worst(|g| g.latency_us.latency.p99).unwrap_or(0)),
            self.game_servers.iter().map(|g| g.rejections).sum::<u64>(),
            self.game_servers.iter().map(|g| g.quests_paid).sum::<u64>(),
        );
        for g in &self.game_servers {
            for sample in &g.error_samples {
                let _ = writeln!(out, "  {} error: {sample}", g.name);
            }
        }
        out
    }

    /// The report as a table for people.
    pub fn table(&self) -> String {
        let mut rows: Vec<(String, String)> = vec![
            ("bots".into(), self.bots.to_string()),
            ("duration".into(), format!("{:.1} s", self.duration_s)),
            (
                "reading pace".into(),
                if self.read_pace { "typewriter" } else { "none" }.into(),
            ),
            ("messages".into(), self.messages.to_string()),
            ("messages/s".into(), format!("{:.1}", self.messages_per_sec)),
            ("latency p50".into(), micros(self.latency_us.p50)),
            ("latency p90".into(), micros(self.latency_us.p90)),
            ("latency p99".into(), micros(self.latency_us.p99)),
            ("latency p99.9".into(), micros(self.latency_us.p999)),
            ("latency max".into(), micros(self.latency_us.max)),
            ("conversations".into(), self.conversations.to_string()),
            ("quests completed".into(), self.quests_completed.to_string()),
            ("game events posted".into(), self.events_posted.to_string()),
            ("reconnects".into(), self.reconnects.to_string()),
            ("rejections".into(), self.rejections.to_string()),
            ("errors".into(), self.errors.to_string()),
        ];
        if let Some(parties) = &self.parties {
            rows.extend(parties.rows());
        }
        for (kind, k) in &self.latency_by_kind_us {
            rows.push((format!("  {kind}"), k.summary("")));
        }
        if self.wind_down_us.messages > 0 {
            rows.push((
                "wind-down (not above)".into(),
                self.wind_down_us.summary(" sent after the deadline"),
            ));
        }
        for (code, n) in &self.rejections_by_code {
            rows.push((format!("  rejected {code}"), n.to_string()));
        }
        for sample in &self.error_samples {
            rows.push(("  error".into(), sample.clone()));
        }
        let mut out = table(
            &["", "value"],
            &rows
                .into_iter()
                .map(|(a, b)| vec![a, b])
                .collect::<Vec<_>>(),
        );
        if !self.game_servers.is_empty() {
            out.push('\n');
            out.push_str(&self.game_servers_table());
        }
        out
    }
}

/// Microseconds for people.
pub fn micros(us: u64) -> String {
    if us >= 10_000 {
        format!("{:.1} ms", us as f64 / 1000.0)
    } else {
        format!("{us} µs")
    }
}

/// A plain text table with a header row and columns padded to their widest cell.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let columns = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        let mut first = true;
        for (i, cell) in cells.enumerate() {
            if !first {
                out.push_str("  ");
            }
            first = false;
            let pad = widths[i].saturating_sub(cell.chars().count());
            out.push_str(cell);
            if i + 1 < columns {
                out.push_str(&" ".repeat(pad));
            }
        }
        out.push('\n');
    };
    line(&mut out, &mut header.iter().copied());
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    line(&mut out, &mut rule.iter().map(String::as_str));
    for row in rows {
        line(&mut out, &mut row.iter().map(String::as_str));
    }
    // Trailing spaces are never written; keep the output tidy for diffs.
    let _ = write!(out, "");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_from_the_histogram() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("bounds");
        for v in 1..=1000u64 {
            h.record(v).expect("in range");
        }
        let l = Latency::from_histogram(&h);
        assert_eq!(l.p50, 500);
        assert_eq!(l.p90, 900);
        assert_eq!(l.p99, 990);
        assert_eq!(l.p999, 999);
        assert_eq!(l.max, 1000);
        assert!(l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max);
        assert_eq!(
            Latency::from_histogram(&Histogram::new(3).expect("h")),
            Latency::default()
        );
    }

    #[test]
    fn the_json_report_has_the_promised_fields() {
        let report = LoadReport {
            bots: 2,
            messages: 10,
            ..LoadReport::default()
        };
        let value = serde_json::to_value(&report).expect("json");
        for key in [
            "messages",
            "messages_per_sec",
            "latency_us",
            "rejections",
            "errors",
            "quests_completed",
        ] {
            assert!(value.get(key).is_some(), "{key}");
        }
        for key in ["p50", "p90", "p99", "p999", "max"] {
            assert!(value["latency_us"].get(key).is_some(), "{key}");
        }
        assert!(report.clean());
        assert!(
            !LoadReport {
                errors: 1,
                ..report.clone()
            }
            .clean()
        );
        assert!(
            !LoadReport {
                rejections: 1,
                ..report
            }
            .clean()
        );
    }

    #[test]
    fn tables_pad_columns() {
        let t = table(
            &["cheat", "got"],
            &[
                vec!["a".into(), "x".into()],
                vec!["longer".into(), "y".into()],
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "cheat   got");
        assert_eq!(lines[1], "------  ---");
        assert_eq!(lines[2], "a       x");
        assert_eq!(lines[3], "longer  y");
        assert_eq!(micros(1500), "1500 µs");
        assert_eq!(micros(25_000), "25.0 ms");
    }
}
