//! Player tokens: HS256 JSON Web Tokens carrying the player id and an expiry.
//!
//! Small enough to read in one sitting, so the whole trust boundary is here: the header must say
//! HS256 (no `none`, no algorithm confusion), the signature is checked in constant time before
//! the claims are even decoded, and the expiry is compared with the caller's clock.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// Longest token accepted; anything longer is refused before any work is done.
pub const MAX_TOKEN_BYTES: usize = 2048;
/// Longest player id.
pub const MAX_PLAYER_ID: usize = 64;

/// What a token says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The player id.
    pub sub: String,
    /// Issued at, seconds since the Unix epoch.
    pub iat: u64,
    /// Expires at, seconds since the Unix epoch.
    pub exp: u64,
}

/// Why a token was refused. The HTTP layer answers all of them with 401.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("no token")]
    Missing,
    #[error("the token is not a well-formed JWT")]
    Malformed,
    #[error("the token is not signed with HS256")]
    WrongAlgorithm,
    #[error("the token's signature does not match")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token names no valid player id")]
    BadPlayerId,
}

#[derive(Serialize, Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    typ: Option<String>,
}

const HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

/// Signs and verifies tokens with one secret.
#[derive(Clone)]
pub struct TokenKey {
    secret: Vec<u8>,
}

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKey(..)")
    }
}

impl TokenKey {
    pub fn new(secret: &str) -> TokenKey {
        TokenKey {
            secret: secret.as_bytes().to_vec(),
        }
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC accepts keys of any length; this cannot fail.
        HmacSha256::new_from_slice(&self.secret).unwrap_or_else(|_| unreachable!())
    }

    /// The resume token of a session: unguessable without the secret, unique per session (the
    /// session key names the instance, whose id includes its start time).
    pub fn resume_token(&self, player: &str, session_key: &str) -> String {
        let mut mac = self.mac();
        mac.update(b"resume|");
        mac.update(session_key.as_bytes());
        mac.update(b"|");
        mac.update(player.as_bytes());
        URL_SAFE_NO_PAD.encode(&mac.finalize().into_bytes()[..18])
    }

    /// A token for `player`, valid from `now` for `ttl_secs`.
    pub fn mint(&self, player: &str, now: u64, ttl_secs: u64) -> String {
        let claims = Claims {
            sub: player.to_owned(),
            iat: now,
            exp: now.saturating_add(ttl_secs),
        };
        let payload = serde_json::to_vec(&claims).unwrap_or_default();
        let mut token = URL_SAFE_NO_PAD.encode(HEADER);
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(payload));
        let mut mac = self.mac();
        mac.update(token.as_bytes());
        let signature = mac.finalize().into_bytes();
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(signature));
        token
    }

    /// Checks a token against this key and the clock `now` (seconds since the Unix epoch).
    pub fn verify(&self, token: &str, now: u64) -> Result<Claims, AuthError> {
        if token.is_empty() {
            return Err(AuthError::Missing);
        }
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::Malformed);
        }
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(AuthError::Malformed);
        };
        let header: Header = URL_SAFE_NO_PAD
            .decode(header)
            .ok()
            .and_then(|h| serde_json::from_slice(&h).ok())
            .ok_or(AuthError::Malformed)?;
        if header.alg != "HS256" {
            return Err(AuthError::WrongAlgorithm);
        }
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| AuthError::Malformed)?;
        let signed_len = token.len() - signature_len(token);
        let mut mac = self.mac();
        mac.update(&token.as_bytes()[..signed_len]);
        mac.verify_slice(&signature)
            .map_err(|_| AuthError::BadSignature)?;
        let claims: Claims = URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|p| serde_json::from_slice(&p).ok())
            .ok_or(AuthError::Malformed)?;
        if claims.exp <= now {
            return Err(AuthError::Expired);
        }
        if !valid_player_id(&claims.sub) {
            return Err(AuthError::BadPlayerId);
        }
        Ok(claims)
    }
}

/// Bytes of the signature part, with its dot: everything before it is what was signed.
fn signature_len(token: &str) -> usize {
    token
        .rfind('.')
        .map_or(token.len(), |dot| token.len() - dot)
}

/// Player ids are short and plain, so they are safe in logs, URLs and database keys.
pub fn valid_player_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_PLAYER_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The player id a device login maps to: stable for a device, never the raw device id.
pub fn player_for_device(device_id: &str) -> String {
    let digest = Sha256::digest(device_id.as_bytes());
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("d-{hex}")
}

/// A device id is 8 to 128 printable ASCII characters.
pub fn valid_device_id(id: &str) -> bool {
    (8..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000;

    fn key() -> TokenKey {
        TokenKey::new("a-test-secret-that-is-long-enough-000")
    }

    #[test]
    fn a_minted_token_verifies_until_it_expires() {
        let token = key().mint("player-1", NOW, 60);
        assert_eq!(
            key().verify(&token, NOW).map(|c| c.sub),
            Ok("player-1".into())
        );
        assert_eq!(key().verify(&token, NOW + 59).map(|c| c.exp), Ok(NOW + 60));
        assert_eq!(key().verify(&token, NOW + 60), Err(AuthError::Expired));
    }

    #[test]
    fn a_token_signed_with_another_secret_is_refused() {
        let token = TokenKey::new("another-secret-that-is-long-enough-11").mint("p", NOW, 60);
        assert_eq!(key().verify(&token, NOW), Err(AuthError::BadSignature));
    }

    #[test]
    fn a_tampered_payload_is_refused() {
        let token = key().mint("alice", NOW, 60);
        let parts: Vec<&str> = token.split('.').collect();
        let forged =
            URL_SAFE_NO_PAD.encode(format!(r#"{{"sub":"bob","iat":{NOW},"exp":{}}}"#, NOW + 60));
        let tampered = format!("{}.{}.{}", parts[0], forged, parts[2]);
        assert_eq!(key().verify(&tampered, NOW), Err(AuthError::BadSignature));
    }

    #[test]
    fn the_none_algorithm_and_garbage_are_refused() {
        let none = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
            URL_SAFE_NO_PAD.encode(format!(r#"{{"sub":"p","iat":0,"exp":{}}}"#, NOW + 9))
        );
        assert_eq!(key().verify(&none, NOW), Err(AuthError::WrongAlgorithm));
        for bad in ["", "a", "a.b", "a.b.c.d", "!!!.???.***", &"x".repeat(5000)] {
            assert!(key().verify(bad, NOW).is_err(), "{bad}");
        }
    }

    #[test]
    fn device_ids_map_to_stable_safe_player_ids() {
        let p = player_for_device("device-0001");
        assert_eq!(p, player_for_device("device-0001"));
        assert_ne!(p, player_for_device("device-0002"));
        assert!(valid_player_id(&p));
        assert!(!valid_device_id("short"));
        assert!(!valid_device_id("has spaces in it"));
    }
}
