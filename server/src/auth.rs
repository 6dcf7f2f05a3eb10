//! Player tokens: HS256 JSON Web Tokens carrying the player id and an expiry.
//!
//! `jsonwebtoken` does the JWT work: the header must name HS256 (any other algorithm, `none`
//! included, is refused before the signature is looked at), the signature is checked in constant
//! time before the claims are decoded, and `exp` and `sub` must be present. The expiry is
//! compared here with the caller's clock, with [`LEEWAY_SECS`] of grace for clocks that differ a
//! little: the crate would read the system clock itself, and the server's clock is an input.
//!
//! Also the HTTP credentials: the `Authorization: Bearer` header ([`bearer`]) and the service key
//! that operators and the trusted game server present ([`require_service_key`]).

use axum::http::{HeaderMap, header};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// Longest token accepted; anything longer is refused before any work is done.
pub const MAX_TOKEN_BYTES: usize = 2048;
/// Longest player id.
pub const MAX_PLAYER_ID: usize = 64;
/// A token is still accepted this many seconds after its `exp` (the minter's clock may run a
/// little ahead of this server's).
pub const LEEWAY_SECS: u64 = 5;

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

/// Signs and verifies tokens with one secret.
#[derive(Clone)]
pub struct TokenKey {
    /// For resume tokens (an HMAC, not a JWT).
    secret: Vec<u8>,
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKey(..)")
    }
}

impl TokenKey {
    pub fn new(secret: &str) -> TokenKey {
        // HS256 only; `exp` and `sub` required. The expiry is checked in `verify` against the
        // caller's clock, so the crate's own check (which reads the system clock) is off.
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_exp = false;
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "sub"]);
        // Other claims are ignored (docs/PROTOCOL.md section 2), an audience included.
        validation.validate_aud = false;
        TokenKey {
            secret: secret.as_bytes().to_vec(),
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
        }
    }

    /// The resume token of a session: unguessable without the secret, unique per session (the
    /// session key names the instance, whose id includes its start time).
    pub fn resume_token(&self, player: &str, session_key: &str) -> String {
        // HMAC accepts keys of any length; this cannot fail.
        let mut mac = HmacSha256::new_from_slice(&self.secret).unwrap_or_else(|_| unreachable!());
        mac.update(b"resume|");
        mac.update(session_key.as_bytes());
        mac.update(b"|");
        mac.update(player.as_bytes());
        URL_SAFE_NO_PAD.encode(&mac.finalize().into_bytes()[..18])
    }

    /// A token for `player`, valid from `now` for `ttl_secs`: header `{"typ":"JWT","alg":"HS256"}`,
    /// claims `{"sub":...,"iat":...,"exp":...}`.
    pub fn mint(&self, player: &str, now: u64, ttl_secs: u64) -> String {
        let claims = Claims {
            sub: player.to_owned(),
            iat: now,
            exp: now.saturating_add(ttl_secs),
        };
        // Encoding these claims with an HMAC key cannot fail.
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .unwrap_or_default()
    }

    /// Checks a token against this key and the clock `now` (seconds since the Unix epoch).
    pub fn verify(&self, token: &str, now: u64) -> Result<Claims, AuthError> {
        if token.is_empty() {
            return Err(AuthError::Missing);
        }
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::Malformed);
        }
        let claims = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|e| refusal(token, e.kind()))?
            .claims;
        if now >= claims.exp.saturating_add(LEEWAY_SECS) {
            return Err(AuthError::Expired);
        }
        if !valid_player_id(&claims.sub) {
            return Err(AuthError::BadPlayerId);
        }
        Ok(claims)
    }
}

/// Why `jsonwebtoken` refused `token`.
fn refusal(token: &str, kind: &ErrorKind) -> AuthError {
    match kind {
        ErrorKind::InvalidSignature => AuthError::BadSignature,
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => AuthError::WrongAlgorithm,
        _ if names_another_algorithm(token) => AuthError::WrongAlgorithm,
        _ => AuthError::Malformed,
    }
}

/// A header naming an algorithm the crate has no name for (`none`) does not parse as a header
/// at all; this says why such a token was refused. Read only for a token already refused.
fn names_another_algorithm(token: &str) -> bool {
    #[derive(Deserialize)]
    struct Alg {
        alg: String,
    }
    token
        .split('.')
        .next()
        .and_then(|header| URL_SAFE_NO_PAD.decode(header).ok())
        .and_then(|header| serde_json::from_slice::<Alg>(&header).ok())
        .is_some_and(|header| header.alg != "HS256")
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

/// The credential of an `Authorization: Bearer <credential>` header (a player token or the
/// service key), if the request has one.
pub fn bearer(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .split_once(' ')
        // RFC 7235: the scheme is matched without regard to case.
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("Bearer"))
        .map(|(_, token)| token.trim_start_matches(' ').to_owned())
}

/// Why a request is refused an endpoint that takes the service key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ServiceKeyError {
    /// No `Authorization: Bearer` credential at all (the HTTP layer answers 401, as for a
    /// missing token).
    #[error("no service key")]
    Missing,
    /// A credential that is not the service key (403).
    #[error("not the service key")]
    Wrong,
}

/// True when two secrets are equal, compared in time that does not depend on where they differ.
pub fn same_secret(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// Operators and the trusted game server present the service key, `expected`; player tokens
/// never satisfy it.
pub fn require_service_key(headers: &HeaderMap, expected: &str) -> Result<(), ServiceKeyError> {
    let given = bearer(headers).ok_or(ServiceKeyError::Missing)?;
    // Constant-time comparison: a key is a secret.
    if same_secret(&given, expected) {
        Ok(())
    } else {
        Err(ServiceKeyError::Wrong)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000;

    fn key() -> TokenKey {
        TokenKey::new("a-test-secret-that-is-long-enough-000")
    }

    #[test]
    fn a_minted_token_verifies_until_it_expires_plus_the_leeway() {
        let token = key().mint("player-1", NOW, 60);
        assert_eq!(
            key().verify(&token, NOW).map(|c| c.sub),
            Ok("player-1".into())
        );
        assert_eq!(key().verify(&token, NOW + 59).map(|c| c.exp), Ok(NOW + 60));
        let last = NOW + 60 + LEEWAY_SECS - 1;
        assert_eq!(key().verify(&token, last).map(|c| c.exp), Ok(NOW + 60));
        assert_eq!(
            key().verify(&token, last + 1),
            Err(AuthError::Expired),
            "{LEEWAY_SECS} s after exp"
        );
    }

    #[test]
    fn a_minted_token_has_the_documented_header_and_claims() {
        let token = key().mint("tester-01", NOW, 3600);
        let parts: Vec<&str> = token.split('.').collect();
        let decode = |part: &str| String::from_utf8(URL_SAFE_NO_PAD.decode(part).expect("b64"));
        assert_eq!(
            decode(parts[0]),
            Ok(r#"{"typ":"JWT","alg":"HS256"}"#.to_owned())
        );
        assert_eq!(
            decode(parts[1]),
            Ok(format!(
                r#"{{"sub":"tester-01","iat":{NOW},"exp":{}}}"#,
                NOW + 3600
            ))
        );
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
    fn another_hmac_algorithm_with_the_right_secret_is_refused() {
        let secret = "a-test-secret-that-is-long-enough-000";
        let claims = Claims {
            sub: "p".into(),
            iat: NOW,
            exp: NOW + 60,
        };
        for alg in [Algorithm::HS384, Algorithm::HS512] {
            let token = jsonwebtoken::encode(
                &Header::new(alg),
                &claims,
                &EncodingKey::from_secret(secret.as_bytes()),
            )
            .expect("encodes");
            assert_eq!(key().verify(&token, NOW), Err(AuthError::WrongAlgorithm));
        }
    }

    #[test]
    fn a_validly_signed_token_over_the_size_limit_or_with_a_bad_player_is_refused() {
        let long = key().mint(&"p".repeat(MAX_TOKEN_BYTES), NOW, 60);
        assert_eq!(key().verify(&long, NOW), Err(AuthError::Malformed));
        let spaced = key().mint("has space", NOW, 60);
        assert_eq!(key().verify(&spaced, NOW), Err(AuthError::BadPlayerId));
        let missing_exp = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &serde_json::json!({"sub": "p", "iat": NOW}),
            &EncodingKey::from_secret(b"a-test-secret-that-is-long-enough-000"),
        )
        .expect("encodes");
        assert_eq!(key().verify(&missing_exp, NOW), Err(AuthError::Malformed));
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

    #[test]
    fn the_service_key_comes_as_a_bearer_credential_in_any_case_of_the_scheme() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::AUTHORIZATION,
                value.parse().expect("a header value"),
            );
            headers
        };
        assert_eq!(bearer(&with("bearer  k")), Some("k".into()));
        assert_eq!(bearer(&with("Basic k")), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
        assert_eq!(require_service_key(&with("BEARER key"), "key"), Ok(()));
        assert_eq!(
            require_service_key(&with("Bearer kez"), "key"),
            Err(ServiceKeyError::Wrong)
        );
        assert_eq!(
            require_service_key(&with("Bearer ke"), "key"),
            Err(ServiceKeyError::Wrong)
        );
        assert_eq!(
            require_service_key(&HeaderMap::new(), "key"),
            Err(ServiceKeyError::Missing)
        );
    }
}
