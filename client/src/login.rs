//! Device login (`POST /v1/auth/device`): the development server's way to a token, as in Nakama.
//! A production server turns it off; its tokens come from the game's own account service.

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::http::{Http, http_error, parse};

/// Seconds before expiry at which a token counts as expired: a token that would lapse while the
/// upgrade is on its way is renewed first.
pub const EXPIRY_MARGIN_SECS: u64 = 30;

/// What a device login returned.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Login {
    pub token: String,
    pub player: String,
    /// Seconds since the Unix epoch.
    #[serde(default)]
    pub expires_at: u64,
}

impl Login {
    /// True when the token is gone or lapses within [`EXPIRY_MARGIN_SECS`] of `now`.
    pub fn expiring(&self, now: u64) -> bool {
        self.expires_at <= now.saturating_add(EXPIRY_MARGIN_SECS)
    }
}

/// `POST /v1/auth/device`: a token for the player this device maps to.
pub async fn device_login(http: &Http, device: &str) -> Result<Login> {
    const PATH: &str = "/v1/auth/device";
    let body = serde_json::json!({ "device_id": device }).to_string();
    match http.post_json(PATH, None, &body).await? {
        (200, text) => {
            let login: Login = parse(PATH, &text)?;
            if login.token.is_empty() || login.player.is_empty() {
                return Err(Error::Protocol(format!(
                    "login answer without a token or player: {text}"
                )));
            }
            Ok(login)
        }
        (status, text) => Err(http_error(PATH, status, text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_expires_a_margin_early() {
        let login = Login {
            token: "t".into(),
            player: "p".into(),
            expires_at: 1_000,
        };
        assert!(!login.expiring(1_000 - EXPIRY_MARGIN_SECS - 1));
        assert!(login.expiring(1_000 - EXPIRY_MARGIN_SECS));
        assert!(login.expiring(u64::MAX));
    }
}
