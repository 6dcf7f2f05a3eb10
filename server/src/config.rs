//! Server configuration: every setting is a flag with a matching environment variable, and every
//! one has a default, so `banter-server serve` runs with no configuration at all.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How logs are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Human,
    /// One JSON object per line, for log shippers.
    Json,
}

/// `banter-server serve` flags.
#[derive(Clone, Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "BANTER_BIND", default_value = "127.0.0.1:7350")]
    pub bind: SocketAddr,
    /// Database URL: `postgres://...` for PostgreSQL, `sqlite://path` (or a path) for SQLite.
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite://data/banter.db")]
    pub database_url: String,
    /// The content folder.
    #[arg(long, env = "BANTER_CONTENT", default_value = "content")]
    pub content: PathBuf,
    /// Secret that signs player tokens (HS256). The default is for local development only;
    /// `--production` refuses to start with it.
    #[arg(long, env = "BANTER_AUTH_SECRET", default_value = DEV_SECRET, hide_default_value = true)]
    pub auth_secret: String,
    /// Key the trusted game server and operators present for internal endpoints.
    #[arg(long, env = "BANTER_SERVICE_KEY", default_value = DEV_SERVICE_KEY, hide_default_value = true)]
    pub service_key: String,
    /// Production mode: the device login endpoint is off and development secrets are refused.
    #[arg(long, env = "BANTER_PRODUCTION")]
    pub production: bool,
    /// Log format.
    #[arg(long, env = "BANTER_LOG_FORMAT", value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
    /// Lifetime of tokens minted by the device login, in seconds.
    #[arg(long, env = "BANTER_TOKEN_TTL", default_value_t = 3600)]
    pub token_ttl_secs: u64,
    /// Messages per second a connection may send on average.
    #[arg(long, env = "BANTER_RATE", default_value_t = 20.0)]
    pub rate_per_sec: f64,
    /// Messages a connection may send in a burst.
    #[arg(long, env = "BANTER_BURST", default_value_t = 40.0)]
    pub burst: f64,
    /// Server messages queued for one connection before it counts as not reading.
    #[arg(long, env = "BANTER_OUTGOING_QUEUE", default_value_t = 128)]
    pub outgoing_queue: usize,
    /// Bytes of server messages queued for one connection before it counts as not reading
    /// (a message larger than this still goes out when nothing else is queued).
    #[arg(long, env = "BANTER_OUTGOING_QUEUE_BYTES", default_value_t = 256 * 1024)]
    pub outgoing_queue_bytes: usize,
    /// The kernel send buffer of every accepted socket (SO_SNDBUF; Linux doubles it). Without
    /// it the kernel autotunes up to megabytes per socket, all held for a peer that never reads.
    #[arg(long, env = "BANTER_SOCKET_SEND_BUFFER", default_value_t = 64 * 1024)]
    pub socket_send_buffer_bytes: usize,
    /// Maximum connections at once.
    #[arg(long, env = "BANTER_MAX_CONNECTIONS", default_value_t = 50_000)]
    pub max_connections: usize,

    /// Seconds a new connection has to send its whole request head (the WebSocket upgrade), and
    /// an idle keep-alive connection its next one, before it is closed (slowloris).
    #[arg(long, env = "BANTER_HANDSHAKE_TIMEOUT", default_value_t = 5)]
    pub handshake_timeout_secs: u64,
    /// Connections allowed in their handshake at once (accepted, request head not yet in);
    /// past it, new connections are closed at accept.
    #[arg(long, env = "BANTER_MAX_HANDSHAKES", default_value_t = 4096)]
    pub max_handshakes: usize,
    /// Sessions starting at once (loading and claiming their player in the store); past it, an
    /// upgrade waits up to 2 s for a slot, then is refused with 503 `at_capacity`, so a connection storm cannot starve the store
    /// pool that players in conversation need.
    #[arg(long, env = "BANTER_MAX_SESSION_STARTS", default_value_t = 32)]
    pub max_session_starts: usize,

    /// Seconds a dropped connection's conversation waits for a `resume`.
    #[arg(long, env = "BANTER_RESUME_WINDOW", default_value_t = 30)]
    pub resume_window_secs: u64,

    /// Seconds a game-server channel lives without a batch (PROTOCOL.md section 16.5).
    #[arg(long, env = "BANTER_CHANNEL_IDLE_TIMEOUT", default_value_t = 60)]
    pub channel_idle_timeout_secs: u64,

    /// The most players one game-server channel carries.
    #[arg(long, env = "BANTER_CHANNEL_MAX_PLAYERS", default_value_t = 1000)]
    pub channel_max_players: usize,

    /// Days the audit log keeps conversation steps and refusals; 0 turns the audit off.
    #[arg(long, env = "BANTER_AUDIT_RETENTION_DAYS", default_value_t = 30)]
    pub audit_retention_days: u64,

    /// Seconds the whole shutdown may take after SIGTERM or SIGINT, whatever the database is
    /// doing: sessions are told and drained, the audit queue flushed and the store closed within
    /// it, and what could not be written is counted and logged. The process exits a quarter of a
    /// second before the grace ends, so a grace equal to the orchestrator's (Docker's `stop`: 10
    /// s; Kubernetes: 30 s) is never cut short by its SIGKILL.
    #[arg(long, env = "BANTER_SHUTDOWN_GRACE", default_value_t = 10)]
    pub shutdown_grace_secs: u64,

    /// Benchmarks only: serve `GET /bench/echo`, a WebSocket that echoes every text frame on the
    /// same stack and settings as `/v1/ws` (`banter-sim bench` measures against it). Refused
    /// with `--production`.
    #[arg(long, env = "BANTER_BENCH_ECHO")]
    pub bench_echo: bool,

    /// Serve the browser playground at `/playground` (on by default in development, off with
    /// `--production` unless this asks for it; `--playground=false` turns it off).
    #[arg(long, env = "BANTER_PLAYGROUND", num_args = 0..=1, default_missing_value = "true")]
    pub playground: Option<bool>,

    /// Count what players do in each conversation for writers (narrative analytics, read at
    /// `GET /admin/analytics`); `--analytics=false` turns it off.
    #[arg(long, env = "BANTER_ANALYTICS", num_args = 0..=1, default_missing_value = "true", default_value_t = true)]
    pub analytics: bool,

    /// Refuse a reload that removes more than this share (0 to 1) of the NPCs or of the
    /// conversations, unless forced (`POST /admin/reload?force=true`).
    #[arg(long, env = "BANTER_RELOAD_MAX_SHRINK", default_value_t = 0.5)]
    pub reload_max_shrink: f64,

    /// Watch the content folder and reload it after a change, once it has been quiet for
    /// `--watch-quiet-ms` (for development; the same checks as `/admin/reload`, never forced).
    #[arg(long, env = "BANTER_WATCH_CONTENT")]
    pub watch_content: bool,

    /// How long the content folder must stay unchanged before the watcher reloads it.
    #[arg(long, env = "BANTER_WATCH_QUIET_MS", default_value_t = 500)]
    pub watch_quiet_ms: u64,
}

/// Development-only signing secret.
pub const DEV_SECRET: &str = "banter-development-secret-do-not-use-in-production";
/// Development-only service key.
pub const DEV_SERVICE_KEY: &str = "banter-development-service-key";

/// The running server's settings, with defaults a test can override field by field.
#[derive(Clone, Debug)]
pub struct Config {
    pub database_url: String,
    pub content: PathBuf,
    pub auth_secret: String,
    pub service_key: String,
    pub production: bool,
    pub token_ttl: Duration,
    pub limits: Limits,
    pub world: WorldRules,
    /// Sessions claim their player in the store, and a newer claim on any instance closes the
    /// older session. Always on in `serve`; tests turn it off to model the window in which a
    /// takeover notification is late, where only the database stands between two live sessions
    /// and a double payment.
    pub coordinate_sessions: bool,
    /// How long a game-server channel lives without a batch.
    pub channel_idle_timeout: Duration,
    /// The most players one channel carries.
    pub channel_max_players: usize,
    /// The audit log of conversation steps and refusals.
    pub audit: AuditConfig,
    /// How long the whole shutdown may take after the signal (see [`crate::run`]).
    pub shutdown_grace: Duration,
    /// Route `GET /bench/echo`, the transport-limit echo for `banter-sim bench` (off by default;
    /// never in production).
    pub bench_echo: bool,
    /// Serve the browser playground at `/playground`.
    pub playground: bool,
    /// Count what players do in each conversation (narrative analytics, `GET /admin/analytics`).
    pub analytics: bool,
    /// A reload removing more than this share (0..=1) of the NPCs or the conversations is
    /// refused unless forced.
    pub reload_max_shrink: f64,
    /// Watch the content folder and reload after it has been quiet this long (development).
    pub watch_content: Option<Duration>,
}

/// Per-connection limits.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest text frame accepted from a client (4 KiB, as Nakama and Colyseus).
    pub max_frame_bytes: usize,
    /// Token bucket: sustained messages per second.
    pub rate_per_sec: f64,
    /// Token bucket: burst size.
    pub burst: f64,
    /// Consecutive rate-limited messages after which a client is disconnected as flooding.
    pub flood_strikes: u32,
    /// Bounded outgoing queue per connection, in messages.
    pub outgoing_queue: usize,
    /// And in bytes.
    pub outgoing_queue_bytes: usize,
    /// SO_SNDBUF of accepted sockets.
    pub socket_send_buffer_bytes: usize,
    /// How often the server pings a connection.
    pub ping_interval: Duration,
    /// A connection silent (no frame, no pong) for this long is dropped as dead.
    pub idle_timeout: Duration,
    /// WebSocket read buffer per connection, allocated when the connection is upgraded
    /// (tungstenite's default is 128 KiB). A frame larger than it still arrives: the buffer grows
    /// for that frame. 1 KiB holds a pipelined burst of eight protocol messages per read.
    pub read_buffer_bytes: usize,
    /// Maximum connections at once.
    pub max_connections: usize,
    /// How long a dropped connection's conversation waits for a `resume`.
    pub resume_window: Duration,
    /// How long a connection may take to send a request head (slowloris protection).
    pub handshake_timeout: Duration,
    /// Connections in their handshake at once.
    pub max_handshakes: usize,
    /// Sessions starting at once (upgraded, player being loaded and claimed); past it an upgrade
    /// is refused with `503`.
    pub max_session_starts: usize,
}

/// The world rules of article section 7.4, shared with every client.
pub use banter_rules::WorldRules;

/// The audit log's settings (`audit.rs`).
#[derive(Clone, Debug)]
pub struct AuditConfig {
    /// Record at all.
    pub enabled: bool,
    /// How long rows are kept.
    pub retention: Duration,
    /// Records waiting for the writer, at most.
    pub queue: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            enabled: true,
            retention: Duration::from_secs(30 * 24 * 3600),
            queue: 65_536,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: banter_protocol::MAX_CLIENT_FRAME_BYTES,
            rate_per_sec: 20.0,
            burst: 40.0,
            flood_strikes: 20,
            outgoing_queue: 128,
            outgoing_queue_bytes: 256 * 1024,
            socket_send_buffer_bytes: 64 * 1024,
            ping_interval: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(45),
            read_buffer_bytes: 1024,
            max_connections: 50_000,
            resume_window: Duration::from_secs(30),
            handshake_timeout: Duration::from_secs(5),
            max_handshakes: 4096,
            max_session_starts: 32,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            database_url: "sqlite://data/banter.db".to_owned(),
            content: PathBuf::from("content"),
            auth_secret: DEV_SECRET.to_owned(),
            service_key: DEV_SERVICE_KEY.to_owned(),
            production: false,
            token_ttl: Duration::from_secs(3600),
            limits: Limits::default(),
            world: WorldRules::default(),
            coordinate_sessions: true,
            channel_idle_timeout: Duration::from_secs(60),
            channel_max_players: 1000,
            audit: AuditConfig::default(),
            shutdown_grace: Duration::from_secs(10),
            bench_echo: false,
            playground: true,
            analytics: true,
            reload_max_shrink: 0.5,
            watch_content: None,
        }
    }
}

/// The shortest shutdown grace: time to tell sessions and close the store.
pub const MIN_SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("--production refuses the development {0}; set {1}")]
    DevelopmentSecret(&'static str, &'static str),
    #[error("the auth secret must be at least 32 bytes")]
    ShortSecret,
    #[error("{0} must be positive")]
    NotPositive(&'static str),
    #[error("--production refuses --bench-echo (BANTER_BENCH_ECHO): the echo is for benchmarks")]
    BenchInProduction,
    #[error("--reload-max-shrink must be a share from 0 to 1, not {0}")]
    ShrinkShare(f64),
}

impl Config {
    /// Builds and validates the configuration from `serve` flags.
    pub fn from_args(args: &ServeArgs) -> Result<Config, ConfigError> {
        let config = Config {
            database_url: args.database_url.clone(),
            content: args.content.clone(),
            auth_secret: args.auth_secret.clone(),
            service_key: args.service_key.clone(),
            production: args.production,
            token_ttl: Duration::from_secs(args.token_ttl_secs),
            limits: Limits {
                rate_per_sec: args.rate_per_sec,
                burst: args.burst,
                outgoing_queue: args.outgoing_queue,
                outgoing_queue_bytes: args.outgoing_queue_bytes,
                socket_send_buffer_bytes: args.socket_send_buffer_bytes,
                max_connections: args.max_connections,
                resume_window: Duration::from_secs(args.resume_window_secs),
                handshake_timeout: Duration::from_secs(args.handshake_timeout_secs),
                max_handshakes: args.max_handshakes,
                max_session_starts: args.max_session_starts,
                ..Limits::default()
            },
            world: WorldRules::default(),
            coordinate_sessions: true,
            channel_idle_timeout: Duration::from_secs(args.channel_idle_timeout_secs.max(1)),
            channel_max_players: args.channel_max_players.max(1),
            audit: AuditConfig {
                enabled: args.audit_retention_days > 0,
                retention: Duration::from_secs(args.audit_retention_days.saturating_mul(24 * 3600)),
                ..AuditConfig::default()
            },
            shutdown_grace: Duration::from_secs(args.shutdown_grace_secs),
            bench_echo: args.bench_echo,
            playground: args.playground.unwrap_or(!args.production),
            analytics: args.analytics,
            reload_max_shrink: args.reload_max_shrink,
            watch_content: args
                .watch_content
                .then(|| Duration::from_millis(args.watch_quiet_ms)),
        };
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.production && self.auth_secret == DEV_SECRET {
            return Err(ConfigError::DevelopmentSecret(
                "auth secret",
                "BANTER_AUTH_SECRET",
            ));
        }
        if self.production && self.service_key == DEV_SERVICE_KEY {
            return Err(ConfigError::DevelopmentSecret(
                "service key",
                "BANTER_SERVICE_KEY",
            ));
        }
        if self.production && self.bench_echo {
            return Err(ConfigError::BenchInProduction);
        }
        if self.auth_secret.len() < 32 {
            return Err(ConfigError::ShortSecret);
        }
        if !(0.0..=1.0).contains(&self.reload_max_shrink) {
            return Err(ConfigError::ShrinkShare(self.reload_max_shrink));
        }
        if self.limits.rate_per_sec <= 0.0 || self.limits.burst < 1.0 {
            return Err(ConfigError::NotPositive("the rate limit"));
        }
        if self.limits.outgoing_queue == 0 || self.limits.outgoing_queue_bytes == 0 {
            return Err(ConfigError::NotPositive("the outgoing queue"));
        }
        if self.limits.socket_send_buffer_bytes == 0 {
            return Err(ConfigError::NotPositive("the socket send buffer"));
        }
        if self.limits.handshake_timeout.is_zero() {
            return Err(ConfigError::NotPositive("the handshake timeout"));
        }
        if self.limits.max_session_starts == 0 {
            return Err(ConfigError::NotPositive("the session-start cap"));
        }
        if self.shutdown_grace < MIN_SHUTDOWN_GRACE {
            return Err(ConfigError::NotPositive(
                "the shutdown grace (at least 1 s)",
            ));
        }
        if self.limits.max_handshakes == 0 {
            return Err(ConfigError::NotPositive("the handshake cap"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Config, ServeArgs};

    #[derive(Parser)]
    struct Serve {
        #[command(flatten)]
        args: ServeArgs,
    }

    /// Whether the playground is served with these flags (and secrets production accepts).
    fn playground(flags: &[&str]) -> bool {
        let mut argv = vec![
            "serve",
            "--auth-secret",
            "a-secret-long-enough-for-production-0123456789",
            "--service-key",
            "a-service-key-long-enough-for-production-0123456789",
        ];
        argv.extend(flags);
        let serve = Serve::try_parse_from(argv).expect("flags");
        Config::from_args(&serve.args).expect("config").playground
    }

    #[test]
    fn the_playground_is_on_in_development_and_off_in_production_unless_asked_for() {
        assert!(playground(&[]), "development: on");
        assert!(!playground(&["--playground=false"]));
        assert!(!playground(&["--production"]), "production: off");
        assert!(playground(&["--production", "--playground"]));
        assert!(playground(&["--production", "--playground=true"]));
    }
}
