//! Prometheus metrics: `prometheus-client` series with typed label sets, served in the Prometheus
//! text format (version 0.0.4).
//!
//! The label values are the protocol's own vocabularies ([`ClientMessageKind`], [`ErrorCode`],
//! [`ActionType`]), so a new message kind, code or action is counted and served without a list
//! to keep here. Every label value's counter is created up front (a series at 0 is served before
//! anything happens) and kept in an array indexed by the enum: recording is one relaxed atomic
//! add on the hot path, with no lock and no map lookup.

use std::fmt::Write;
use std::time::Duration;

use banter_protocol::{ActionType, ClientMessageKind, ErrorCode};
use prometheus_client::encoding::prometheus_text;
use prometheus_client::encoding::{
    EncodeLabelSet, EncodeLabelValue, EncodeMetric, LabelValueEncoder,
};
use prometheus_client::metrics::TypedMetric;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use strum::{EnumCount, VariantArray};

use crate::analytics::Analytics;
use crate::audit::AuditLog;
use crate::store::WriteTimings;

mod sharded;

pub use sharded::{ShardedCounter, ShardedHistogram};

/// The `Content-Type` of `/metrics`: `text/plain; version=0.0.4; charset=utf-8`.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// Upper bounds of the handling-latency buckets, in seconds.
const LATENCY_BUCKETS: [f64; 14] = [
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25,
];

/// The `type` of a counted message: one of the protocol's kinds, or `invalid` for a frame that
/// did not decode (or was refused before decoding).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum MessageType {
    Kind(ClientMessageKind),
    Invalid,
}

impl MessageType {
    /// The label of a message kind's wire name; a name the protocol does not have is `invalid`.
    pub fn of(kind: &str) -> MessageType {
        kind.parse().map_or(MessageType::Invalid, MessageType::Kind)
    }

    fn name(self) -> &'static str {
        match self {
            MessageType::Kind(kind) => kind.into(),
            MessageType::Invalid => "invalid",
        }
    }

    /// Its slot: the kinds in declaration order, then `invalid`.
    fn index(self) -> usize {
        match self {
            MessageType::Kind(kind) => kind as usize,
            MessageType::Invalid => ClientMessageKind::COUNT,
        }
    }
}

impl EncodeLabelValue for MessageType {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(self.name())
    }
}

/// A protocol vocabulary as a label value, in its wire form (`ErrorCode::name`,
/// `ActionType::name`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct Wire<T>(pub T);

impl<T: Copy + Into<&'static str>> EncodeLabelValue for Wire<T> {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(self.0.into())
    }
}

/// How a content reload ended.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ReloadResult {
    Ok,
    Refused,
}

impl EncodeLabelValue for ReloadResult {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(match self {
            ReloadResult::Ok => "ok",
            ReloadResult::Refused => "refused",
        })
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MessageLabels {
    r#type: MessageType,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    code: Wire<ErrorCode>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ActionLabels {
    action: Wire<ActionType>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: ReloadResult,
}

/// Every series the server serves (the audit's two are added at render time from the audit log).
/// Counters are registered without `_total`: the encoder appends it.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    open_sessions: Gauge,
    sessions_total: Counter,
    open_channels: Gauge,
    channels_total: Counter,
    sessions_taken_over: Counter,
    auth_failures: Counter,
    http_connections_open: Gauge,
    handshakes_refused: Counter,
    handshakes_timed_out: Counter,
    session_starts_refused: Counter,
    /// By [`MessageType::index`].
    messages: [ShardedCounter; ClientMessageKind::COUNT + 1],
    /// By `ErrorCode as usize` (declaration order).
    rejections: [ShardedCounter; ErrorCode::COUNT],
    /// By `ActionType as usize` (declaration order).
    actions: [ShardedCounter; ActionType::COUNT],
    conversations_opened: Counter,
    content_reloads: [Counter; 2],
    /// Observed once a message, as the counts by type, rejection and action are: sharded
    /// ([`sharded`]), so that recording shares no cache line between the runtime's workers.
    handling: ShardedHistogram<{ LATENCY_BUCKETS.len() }>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

/// Registers `metric` and hands back a handle to it (metrics are shared handles).
fn registered<M>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M
where
    M: prometheus_client::registry::Metric + Clone,
{
    registry.register(name, help, metric.clone());
    metric
}

/// Registers a family of `M` series labelled by `L`, creates the series of `label(i)` for every
/// `i` below `N` up front (a series at 0 is served before anything happens) and hands them back
/// by `i`, for recording without a map lookup.
fn labelled<L, M, const N: usize>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    label: impl Fn(usize) -> L,
) -> [M; N]
where
    L: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static,
    M: EncodeMetric + TypedMetric + Default + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    let family = registered(registry, name, help, Family::<L, M>::default());
    std::array::from_fn(|i| family.get_or_create(&label(i)).clone())
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let r = &mut registry;
        let open_sessions = registered(
            r,
            "banter_open_sessions",
            "WebSocket sessions open now",
            Gauge::default(),
        );
        let sessions_total = registered(
            r,
            "banter_sessions",
            "WebSocket sessions opened since start",
            Counter::default(),
        );
        let open_channels = registered(
            r,
            "banter_open_channels",
            "Game-server channels open now",
            Gauge::default(),
        );
        let channels_total = registered(
            r,
            "banter_channels",
            "Game-server channels opened since start",
            Counter::default(),
        );
        let sessions_taken_over = registered(
            r,
            "banter_sessions_taken_over",
            "Sessions closed because a newer session of the player claimed it on another instance",
            Counter::default(),
        );
        let auth_failures = registered(
            r,
            "banter_auth_failures",
            "Upgrades refused for a missing or invalid token",
            Counter::default(),
        );
        let http_connections_open = registered(
            r,
            "banter_http_connections_open",
            "TCP connections served as HTTP now: in their handshake, or a request in flight (upgraded sessions not included)",
            Gauge::default(),
        );
        let handshakes_refused = registered(
            r,
            "banter_handshakes_refused",
            "Connections closed at accept because too many were still in their handshake",
            Counter::default(),
        );
        let handshakes_timed_out = registered(
            r,
            "banter_handshakes_timed_out",
            "Connections closed because their request head did not arrive in time (slowloris)",
            Counter::default(),
        );
        let session_starts_refused = registered(
            r,
            "banter_session_starts_refused",
            "Upgrades refused (503) because too many sessions were loading and claiming their player",
            Counter::default(),
        );
        let message_type = |i: usize| {
            ClientMessageKind::VARIANTS
                .get(i)
                .map_or(MessageType::Invalid, |k| MessageType::Kind(*k))
        };
        let messages = labelled(
            r,
            "banter_messages",
            "Client messages received, by type",
            |i| MessageLabels {
                r#type: message_type(i),
            },
        );
        let rejections = labelled(
            r,
            "banter_rejections",
            "Client messages refused, by error code",
            |i| CodeLabels {
                code: Wire(ErrorCode::ALL[i]),
            },
        );
        let actions = labelled(
            r,
            "banter_actions",
            "Dialogue actions accepted and run, by action type",
            |i| ActionLabels {
                action: Wire(ActionType::ALL[i]),
            },
        );
        let conversations_opened = registered(
            r,
            "banter_conversations_opened",
            "Conversations opened",
            Counter::default(),
        );
        let content_reloads = labelled(
            r,
            "banter_content_reloads",
            "Content reloads, by result",
            |i| ResultLabels {
                result: [ReloadResult::Ok, ReloadResult::Refused][i],
            },
        );
        let handling = registered(
            r,
            "banter_message_handling_seconds",
            "Time to handle one client message, from decode to last reply queued",
            ShardedHistogram::new(LATENCY_BUCKETS),
        );
        Metrics {
            registry,
            open_sessions,
            sessions_total,
            open_channels,
            channels_total,
            sessions_taken_over,
            auth_failures,
            http_connections_open,
            handshakes_refused,
            handshakes_timed_out,
            session_starts_refused,
            messages,
            rejections,
            actions,
            conversations_opened,
            content_reloads,
            handling,
        }
    }

    pub fn session_opened(&self) {
        self.open_sessions.inc();
        self.sessions_total.inc();
    }

    /// A newer claim of the player on another instance (or a resync) closed a local session.
    pub fn session_taken_over(&self) {
        self.sessions_taken_over.inc();
    }

    pub fn channel_opened(&self) {
        self.open_channels.inc();
        self.channels_total.inc();
    }

    pub fn channel_closed(&self) {
        self.open_channels.dec();
    }

    pub fn session_closed(&self) {
        self.open_sessions.dec();
    }

    pub fn open_sessions(&self) -> i64 {
        self.open_sessions.get()
    }

    pub fn auth_failed(&self) {
        self.auth_failures.inc();
    }

    /// A TCP connection was accepted and is being served as HTTP (until it closes or upgrades).
    pub fn http_connection_opened(&self) {
        self.http_connections_open.inc();
    }

    pub fn http_connection_closed(&self) {
        self.http_connections_open.dec();
    }

    /// A connection was closed at accept because too many were still in their handshake.
    pub fn handshake_refused(&self) {
        self.handshakes_refused.inc();
    }

    /// An upgrade was refused because too many sessions were starting.
    pub fn session_start_refused(&self) {
        self.session_starts_refused.inc();
    }

    /// A connection was closed because its request head did not arrive in time.
    pub fn handshake_timed_out(&self) {
        self.handshakes_timed_out.inc();
    }

    /// Counts a message by its wire `type` (`ClientMessage::kind`); anything else, such as
    /// `"invalid"`, counts as `invalid`.
    pub fn message(&self, kind: &str) {
        self.message_type(MessageType::of(kind));
    }

    pub fn message_type(&self, kind: MessageType) {
        self.messages[kind.index()].inc();
    }

    pub fn rejected(&self, code: ErrorCode) {
        self.rejections[code as usize].inc();
    }

    pub fn rejections(&self, code: ErrorCode) -> u64 {
        self.rejections[code as usize].get()
    }

    pub fn action_run(&self, action: ActionType) {
        self.actions[action as usize].inc();
    }

    pub fn conversation_opened(&self) {
        self.conversations_opened.inc();
    }

    pub fn reloaded(&self, ok: bool) {
        self.content_reloads[usize::from(!ok)].inc();
    }

    /// Serves the store's write timings (SQLite's: where a write's time goes) with the rest.
    pub fn serve_write_timings(&mut self, timings: &WriteTimings) {
        let r = &mut self.registry;
        r.register(
            "banter_store_write_turn_wait_seconds",
            "Time a SQLite write waited for its turn at the write gate, by queue",
            timings.turn_wait.clone(),
        );
        r.register(
            "banter_store_write_turn_held_seconds",
            "Time a SQLite write held its turn at the write gate (its statements and COMMIT), by queue",
            timings.turn_held.clone(),
        );
        r.register(
            "banter_store_commit_seconds",
            "Time a group commit lane's COMMIT took (the fsync, on the players' lane)",
            timings.commit.clone(),
        );
        r.register(
            "banter_store_checkpoint_seconds",
            "Time a WAL checkpoint that copied frames took (beside the writers, holding no turn)",
            timings.checkpoint.clone(),
        );
    }

    /// Records how long handling one client message took.
    pub fn handled(&self, took: Duration) {
        self.handling.observe(took);
    }

    /// The Prometheus text exposition (version 0.0.4, [`CONTENT_TYPE`]) of every series, the
    /// audit log's and the narrative analytics' counters included.
    pub fn render(&self, audit: &AuditLog, analytics: &Analytics) -> String {
        let mut audit_registry = Registry::default();
        audit_registry.register(
            "banter_audit_records",
            "Audit records queued for the store",
            ConstCounter::new(audit.recorded()),
        );
        audit_registry.register(
            "banter_audit_dropped",
            "Audit records dropped (queue full or store refused)",
            ConstCounter::new(audit.dropped()),
        );
        audit_registry.register(
            "banter_analytics_dropped",
            "Narrative analytics counts dropped: the store was down so long that more distinct \
             rows waited than the memory bound allows",
            ConstCounter::new(analytics.dropped()),
        );
        let mut out = String::with_capacity(8192);
        // Writing into a String cannot fail.
        let _ = prometheus_text::encode(&mut out, &self.registry);
        let _ = prometheus_text::encode(&mut out, &audit_registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::config::AuditConfig;

    use super::*;

    fn render(m: &Metrics) -> String {
        m.render(
            &AuditLog::new(&AuditConfig::default()).0,
            &Analytics::new(true),
        )
    }

    #[test]
    fn renders_every_family_with_its_samples() {
        let m = Metrics::default();
        m.session_opened();
        m.message("advance");
        m.message("no-such-kind");
        m.message("invalid");
        m.rejected(ErrorCode::NotReachable);
        m.action_run(ActionType::AcceptQuest);
        m.reloaded(false);
        m.handled(Duration::from_micros(30));
        let text = render(&m);
        for line in [
            "# TYPE banter_open_sessions gauge",
            "banter_open_sessions 1",
            "# TYPE banter_sessions_total counter",
            "banter_sessions_total 1",
            "banter_messages_total{type=\"advance\"} 1",
            "banter_messages_total{type=\"talk\"} 0",
            "banter_messages_total{type=\"invalid\"} 2",
            "banter_rejections_total{code=\"not_reachable\"} 1",
            "banter_rejections_total{code=\"malformed\"} 0",
            "banter_actions_total{action=\"AcceptQuest\"} 1",
            "banter_content_reloads_total{result=\"ok\"} 0",
            "banter_content_reloads_total{result=\"refused\"} 1",
            "# TYPE banter_message_handling_seconds histogram",
            "banter_message_handling_seconds_bucket{le=\"5e-05\"} 1",
            "banter_message_handling_seconds_bucket{le=\"2.5e-05\"} 0",
            "banter_message_handling_seconds_bucket{le=\"+Inf\"} 1",
            "banter_message_handling_seconds_count 1",
            "# TYPE banter_audit_records_total counter",
            "banter_audit_records_total 0",
            "banter_audit_dropped_total 0",
            "banter_analytics_dropped_total 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        assert!(!text.contains("# EOF"));
    }

    #[test]
    fn the_stores_write_timings_are_served_as_labelled_histograms() {
        let mut m = Metrics::default();
        let timings = WriteTimings::default();
        m.serve_write_timings(&timings);
        timings.waited(crate::store::Priority::Player, 0.003);
        timings.commit_of("players").observe(0.4);
        timings.checkpoint.observe(0.02);
        let text = render(&m);
        for line in [
            "# TYPE banter_store_write_turn_wait_seconds histogram",
            "banter_store_write_turn_wait_seconds_count{priority=\"player\"} 1",
            "banter_store_write_turn_wait_seconds_bucket{priority=\"player\",le=\"0.005\"} 1",
            "banter_store_write_turn_held_seconds_count{priority=\"housekeeping\"} 0",
            "banter_store_commit_seconds_bucket{lane=\"players\",le=\"0.5\"} 1",
            "banter_store_commit_seconds_bucket{lane=\"players\",le=\"0.25\"} 0",
            "banter_store_checkpoint_seconds_count 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        let types = text
            .lines()
            .filter(|l| l.starts_with("# TYPE banter_store_"))
            .count();
        assert_eq!(types, 4, "one family each");
    }

    #[test]
    fn every_label_value_of_the_protocol_is_served_once() {
        let text = render(&Metrics::default());
        let count = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
        assert_eq!(
            count("banter_messages_total{"),
            ClientMessageKind::COUNT + 1
        );
        assert_eq!(count("banter_rejections_total{"), ErrorCode::COUNT);
        assert_eq!(count("banter_actions_total{"), ActionType::COUNT);
        for (i, kind) in ClientMessageKind::VARIANTS.iter().enumerate() {
            assert_eq!(MessageType::Kind(*kind).index(), i);
            let name: &str = kind.into();
            assert_eq!(MessageType::of(name), MessageType::Kind(*kind));
        }
        assert_eq!(MessageType::of("invalid"), MessageType::Invalid);
    }
}
