//! After a dropped connection: connect again with backoff (logging in again when the token has
//! lapsed or is refused), then `resume` the conversation the dropped session left open.

use std::time::Duration;

use crate::connection::{Connection, Refusal, Resumed};
use crate::error::{Error, Result};
use crate::http::Http;
use crate::login::{Login, device_login};
use crate::token::unix_now;

/// How many times to try, and how long to wait between tries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub attempts: u32,
    /// The wait before the second attempt; each later wait doubles, up to `max`.
    pub first: Duration,
    pub max: Duration,
}

impl Backoff {
    /// Eight attempts over about ten seconds: long enough for a server restart on loopback, short
    /// enough that a player is told soon.
    pub const DEFAULT: Backoff = Backoff {
        attempts: 8,
        first: Duration::from_millis(100),
        max: Duration::from_secs(3),
    };

    /// The wait before attempt `attempt` (counted from 0): none before the first.
    pub fn delay(&self, attempt: u32) -> Duration {
        if attempt == 0 {
            return Duration::ZERO;
        }
        let factor = 1u32.checked_shl(attempt - 1).unwrap_or(u32::MAX);
        self.first.saturating_mul(factor).min(self.max)
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::DEFAULT
    }
}

/// Connects again as the player of `login`, with `backoff` between attempts. Logs `device` in
/// again first when the token lapses within a margin ([`Login::expiring`]) or the server refused
/// it (`401`); `login` then holds the new token. The last attempt's error if none succeeds.
pub async fn reconnect(
    http: &Http,
    device: &str,
    login: &mut Login,
    backoff: Backoff,
) -> Result<Connection> {
    let mut last_error = Error::Closed;
    for attempt in 0..backoff.attempts {
        if attempt > 0 {
            tokio::time::sleep(backoff.delay(attempt)).await;
        }
        if login.expiring(unix_now()) {
            match device_login(http, device).await {
                Ok(fresh) => *login = fresh,
                Err(e) => {
                    last_error = e;
                    continue;
                }
            }
        }
        match Connection::connect(http.endpoint(), &login.token).await {
            Ok(connection) => return Ok(connection),
            Err(Error::Http { status: 401, .. }) => {
                // The token is no longer good: log in again on the next attempt.
                login.expires_at = 0;
                last_error = Error::Other("token refused".to_owned());
            }
            Err(e) => last_error = e,
        }
    }
    Err(last_error)
}

/// [`reconnect`], then `resume` with the `resume_token` of the dropped session's welcome: the
/// new connection, and the conversation taken back or why not (the connection stands either
/// way).
pub async fn reconnect_and_resume(
    http: &Http,
    device: &str,
    login: &mut Login,
    backoff: Backoff,
    resume_token: &str,
) -> Result<(Connection, std::result::Result<Resumed, Refusal>)> {
    let mut connection = reconnect(http, device, login, backoff).await?;
    let resumed = connection.resume(resume_token).await?;
    Ok((connection, resumed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_the_second_attempt_up_to_the_cap() {
        let b = Backoff::DEFAULT;
        let waits: Vec<u64> = (0..8).map(|a| b.delay(a).as_millis() as u64).collect();
        assert_eq!(waits, [0, 100, 200, 400, 800, 1600, 3000, 3000]);
        assert_eq!(b.delay(u32::MAX), b.max, "no overflow");
    }
}
