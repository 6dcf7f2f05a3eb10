//! The load test: N honest bots against a live server for a while, their round trips in one
//! HDR histogram, and a report that fails on any refusal or error.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use banter_dialogue::content::Content;
use tokio::time::Instant;

use crate::bot::{self, BotOptions, BotReport};
use crate::channel::{ChannelClient, ChannelConfig, ChannelSeat, ChannelStats, Transport};
use crate::error::{Result, SimError};
use crate::http::Endpoint;
use crate::pace::ReadingPace;
use crate::party::{PartyReport, PartyRun, PartySizes, SharedStop};
use crate::report::{GameServerReport, KindLatency, Latency, LoadReport, progress_bar};
use crate::session::{Live, SessionOptions, new_histogram};

/// How a load test runs.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub endpoint: Endpoint,
    /// Locales the bots read in, one after another (bot `i` reads in `locales[i % len]`);
    /// empty: the source language.
    pub locales: Vec<String>,
    pub bots: usize,
    pub duration: Duration,
    /// Each bot's own message rate limit (the server allows 20/s sustained).
    pub rate_per_sec: f64,
    pub pace: ReadingPace,
    pub service_key: String,
    pub content: Arc<Content>,
    /// Draw a progress bar on stderr (only if it is a terminal).
    pub progress: bool,
    /// Makes device ids unique to this run, so every run starts with new players.
    pub run_id: String,
    /// Carry the bots over simulated game servers' channels instead of their own WebSockets
    /// (`bots` is then ignored).
    pub game_servers: Option<GameServerLoad>,
    /// Play in parties of these sizes ([`crate::party`]): every bot is a party member riding
    /// the content's shared conversation with its party, instead of questing alone. Not with
    /// `game_servers`.
    pub parties: Option<PartySizes>,
}

/// Simulated game servers, each carrying its players over one channel.
#[derive(Clone, Debug)]
pub struct GameServerLoad {
    pub servers: usize,
    pub players_per_server: usize,
    pub transport: Transport,
    /// HTTP: each game server's request budget.
    pub requests_per_minute: f64,
    /// HTTP: how long an idle batch waits for an event (`wait_ms`); `None`: one batching
    /// interval, so an item queued during a long-poll waits at most that long.
    pub long_poll: Option<Duration>,
}

impl GameServerLoad {
    /// Game server `g`'s scope prefix in run `run_id`: its players' ids start with it.
    pub fn prefix(run_id: &str, g: usize) -> String {
        format!("gs{g}-{run_id}-")
    }

    fn config(&self, endpoint: &Endpoint, credential: String) -> ChannelConfig {
        let mut config = ChannelConfig {
            endpoint: endpoint.clone(),
            credential,
            transport: self.transport,
            requests_per_minute: self.requests_per_minute,
            long_poll: Duration::ZERO,
        };
        config.long_poll = self
            .long_poll
            .unwrap_or_else(|| config.interval())
            .min(Duration::from_millis(banter_protocol::channel::MAX_WAIT_MS));
        config
    }
}

/// One simulated game server of a run: its name, credential and channel.
struct GameServer {
    name: String,
    client: ChannelClient,
    task: tokio::task::JoinHandle<ChannelStats>,
}

/// Issues each game server its credential (scope: its own prefix) and opens its channel.
async fn open_game_servers(
    options: &LoadOptions,
    load: &GameServerLoad,
) -> Result<Vec<GameServer>> {
    let mut servers = Vec::with_capacity(load.servers);
    for g in 0..load.servers {
        let name = format!("sim-{}-gs{g}", options.run_id);
        let prefix = GameServerLoad::prefix(&options.run_id, g);
        let issued = crate::channel::issue(
            &options.endpoint,
            &options.service_key,
            &name,
            std::slice::from_ref(&prefix),
        )
        .await?;
        let (client, task) =
            crate::channel::open(load.config(&options.endpoint, issued.credential)).await?;
        servers.push(GameServer { name, client, task });
    }
    Ok(servers)
}

/// A run id from the clock: new players on every run.
pub fn fresh_run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{:x}", nanos & 0xffff_ffff_ffff)
}

/// Runs the bots and gathers their figures.
pub async fn run(options: LoadOptions) -> Result<LoadReport> {
    if options.parties.is_some() && options.game_servers.is_some() {
        return Err(SimError::Other(
            "parties are played over the bots' own WebSockets, not game servers' channels"
                .to_owned(),
        ));
    }
    let live = Arc::new(Live::default());
    let game_servers = match &options.game_servers {
        Some(load) => open_game_servers(&options, load).await?,
        None => Vec::new(),
    };
    let bots = match &options.game_servers {
        Some(load) => load.servers * load.players_per_server,
        None => options.bots,
    };
    // The game server carrying bot `i`, if any.
    let server_of = |i: usize| {
        options
            .game_servers
            .as_ref()
            .map(|load| i / load.players_per_server.max(1))
    };
    let started = Instant::now();
    let deadline = started + options.duration;
    // Logins are spread over the first second (or tenth of the run) rather than all at once.
    let ramp = options
        .duration
        .min(Duration::from_secs(1))
        .min(options.duration / 10);
    let atlas = Arc::new(crate::world::Atlas::new(&options.content));
    let fresh = crate::facts::ClientFacts::fresh(&options.content);
    let session_options = |i: usize| {
        let locale = options
            .locales
            .get(i % options.locales.len().max(1))
            .cloned();
        SessionOptions {
            endpoint: options.endpoint.clone().with_locale(locale),
            device: format!("sim-bot-{}-{i}", options.run_id),
            rate_per_sec: options.rate_per_sec,
            content: options.content.clone(),
        }
    };
    // Parties: one task each, its members' bots in party order.
    let mut party_tasks = Vec::new();
    if let Some(sizes) = &options.parties {
        let stop = Arc::new(SharedStop::find(&options.content)?);
        let split = sizes.split(bots).map_err(SimError::Other)?;
        let parties = split.len();
        let mut first = 0;
        for (p, size) in split.into_iter().enumerate() {
            let run = PartyRun {
                stop: stop.clone(),
                members: (first..first + size)
                    .map(|i| (session_options(i), i as u64))
                    .collect(),
                pace: options.pace,
                deadline,
                fresh: fresh.clone(),
                live: Some(live.clone()),
            };
            first += size;
            let delay = ramp.mul_f64(p as f64 / parties.max(1) as f64);
            party_tasks.push(tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                crate::party::run_party(run).await
            }));
        }
    }
    let mut tasks = Vec::with_capacity(bots);
    for i in (0..bots).take_while(|_| options.parties.is_none()) {
        let locale = options
            .locales
            .get(i % options.locales.len().max(1))
            .cloned();
        let channel = server_of(i).and_then(|g| {
            let load = options.game_servers.as_ref()?;
            let server = game_servers.get(g)?;
            Some(ChannelSeat {
                client: server.client.clone(),
                player: format!(
                    "{}{}",
                    GameServerLoad::prefix(&options.run_id, g),
                    i % load.players_per_server.max(1)
                ),
                locale: locale.clone(),
            })
        });
        let bot_options = BotOptions {
            channel,
            session: session_options(i),
            service_key: options.service_key.clone(),
            pace: options.pace,
            deadline,
            seed: i as u64,
            atlas: atlas.clone(),
            fresh: fresh.clone(),
        };
        let delay = ramp.mul_f64(i as f64 / bots.max(1) as f64);
        let live = live.clone();
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            bot::run(bot_options, Some(live)).await
        }));
    }
    let progress = options.progress.then(|| {
        let live = live.clone();
        let total = options.duration;
        let bar = progress_bar(duration_ms(total), "[{bar:30}] {msg}", true);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            loop {
                tick.tick().await;
                let elapsed = started.elapsed().min(total);
                bar.set_position(duration_ms(elapsed));
                bar.set_message(progress_message(&live, bots, elapsed, total));
            }
        })
    });

    let mut report = LoadReport {
        bots,
        read_pace: options.pace != ReadingPace::INSTANT,
        ..LoadReport::default()
    };
    let mut per_server: Vec<GameServerReport> = game_servers
        .iter()
        .map(|s| GameServerReport {
            name: s.name.clone(),
            players: options
                .game_servers
                .as_ref()
                .map_or(0, |l| l.players_per_server),
            ..GameServerReport::default()
        })
        .collect();
    let mut merged = Merged {
        histogram: new_histogram()?,
        wind_down: new_histogram()?,
        by_kind: std::collections::BTreeMap::new(),
    };
    for (i, task) in tasks.into_iter().enumerate() {
        let server = server_of(i).and_then(|g| per_server.get_mut(g));
        match task.await {
            Ok(bot) => merged.absorb(&mut report, server, bot),
            Err(e) => {
                report.errors += 1;
                report.error_samples.push(format!("a bot task failed: {e}"));
            }
        }
    }
    let mut parties: Option<PartyReport> = options.parties.map(|_| PartyReport::default());
    for task in party_tasks {
        match task.await {
            Ok(outcome) => {
                for bot in outcome.bots {
                    merged.absorb(&mut report, None, bot);
                }
                if let Some(parties) = &mut parties {
                    parties.absorb(outcome.report);
                }
            }
            Err(e) => {
                report.errors += 1;
                report
                    .error_samples
                    .push(format!("a party task failed: {e}"));
            }
        }
    }
    report.parties = parties;
    if let Some(progress) = progress {
        // Aborting drops the bar, which clears it.
        progress.abort();
        let _ = progress.await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    // Every bot is done, so every player left: each channel delivers the leaves and closes.
    for (server, report_row) in game_servers.into_iter().zip(per_server.iter_mut()) {
        let GameServer { client, task, .. } = server;
        drop(client);
        match task.await {
            Ok(stats) => report_row.absorb(stats),
            Err(e) => {
                report_row.errors += 1;
                report_row
                    .error_samples
                    .push(format!("the channel's task failed: {e}"));
            }
        }
    }
    if let Some(load) = &options.game_servers {
        report.transport = Some(load.transport.name().to_owned());
        if load.transport == Transport::Http {
            report.requests_per_minute_budget = Some(load.requests_per_minute);
        }
    }
    report.game_servers = per_server;
    report.duration_s = (elapsed * 10.0).round() / 10.0;
    report.messages_per_sec = if elapsed > 0.0 {
        (report.messages as f64 / elapsed * 10.0).round() / 10.0
    } else {
        0.0
    };
    report.latency_us = Latency::from_histogram(&merged.histogram);
    report.wind_down_us = KindLatency::from_histogram(&merged.wind_down);
    report.latency_by_kind_us = merged
        .by_kind
        .into_iter()
        .map(|(kind, h)| (kind, KindLatency::from_histogram(&h)))
        .collect();
    Ok(report)
}

/// The bots' figures, merged as they finish.
struct Merged {
    histogram: hdrhistogram::Histogram<u64>,
    wind_down: hdrhistogram::Histogram<u64>,
    by_kind: std::collections::BTreeMap<String, hdrhistogram::Histogram<u64>>,
}

impl Merged {
    /// Adds one bot's figures to the report (and to its game server's row, if one carried it).
    fn absorb(
        &mut self,
        report: &mut LoadReport,
        server: Option<&mut GameServerReport>,
        bot: BotReport,
    ) {
        report.events_posted += bot.events_posted;
        if let Some(server) = server {
            server.events_posted += bot.events_posted;
            server.errors += u64::from(bot.start_error.is_some());
            if let Some(m) = &bot.metrics {
                server.errors += m.errors;
                server.quests_completed += m.quests_completed;
                for sample in &m.error_samples {
                    if server.error_samples.len() < 5 {
                        server.error_samples.push(sample.clone());
                    }
                }
            }
        }
        if let Some(e) = bot.start_error {
            report.errors += 1;
            if report.error_samples.len() < 10 {
                report.error_samples.push(e);
            }
        }
        let Some(m) = bot.metrics else { return };
        if let Some(player) = bot.player {
            report.acknowledged.push((player, m.acknowledged.clone()));
        }
        report.messages += m.messages;
        let _ = self.histogram.add(&m.round_trips);
        let _ = self.wind_down.add(&m.wind_down);
        for (kind, round_trips) in m.round_trips_by_kind {
            match self.by_kind.get_mut(&kind) {
                Some(merged) => {
                    let _ = merged.add(&round_trips);
                }
                None => {
                    self.by_kind.insert(kind, round_trips);
                }
            }
        }
        for (code, n) in m.rejections {
            report.rejections += n;
            *report
                .rejections_by_code
                .entry(code.to_owned())
                .or_insert(0) += n;
        }
        report.errors += m.errors;
        for sample in m.error_samples {
            if report.error_samples.len() < 10 {
                report.error_samples.push(sample);
            }
        }
        report.reconnects += m.reconnects;
        report.quests_completed += m.quests_completed;
        report.conversations += m.conversations;
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The figures beside the progress bar.
pub fn progress_message(live: &Live, bots: usize, elapsed: Duration, total: Duration) -> String {
    format!(
        "{:>5.1}/{:.0} s  bots {bots}  msgs {}  conversations {}  quests {}  rejections {}  errors {}",
        elapsed.as_secs_f64().min(total.as_secs_f64()),
        total.as_secs_f64(),
        live.messages.load(Ordering::Relaxed),
        live.conversations.load(Ordering::Relaxed),
        live.quests_completed.load(Ordering::Relaxed),
        live.rejections.load(Ordering::Relaxed),
        live.errors.load(Ordering::Relaxed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_message_counts_time_and_figures() {
        let live = Live::default();
        Live::add(&live.messages);
        let half = progress_message(&live, 3, Duration::from_secs(5), Duration::from_secs(10));
        assert!(half.starts_with("  5.0/10 s"), "{half}");
        assert!(half.contains("bots 3") && half.contains("msgs 1"), "{half}");
        let done = progress_message(&live, 3, Duration::from_secs(12), Duration::from_secs(10));
        assert!(done.starts_with(" 10.0/10 s"), "{done}");
        assert_eq!(duration_ms(Duration::from_millis(1500)), 1500);
    }
}
