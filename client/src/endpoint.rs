//! Where the server is: `host:port`, and whether it speaks TLS. Pure: parsing and URL building,
//! no I/O.

use crate::error::{Error, Result};

/// The server's address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port`.
    pub authority: String,
    /// `https://` and `wss://` (only with the crate's `rustls` feature).
    pub secure: bool,
    /// The locale the player reads in (BCP 47, sent as `?locale=`); `None`: the content's
    /// source language.
    pub locale: Option<String>,
}

impl Endpoint {
    /// Parses `http://HOST:PORT`, `ws://HOST:PORT` or `HOST:PORT` (a trailing `/` or path is
    /// ignored). `https://` and `wss://` parse only when the crate is built with its `rustls`
    /// feature; any other scheme is refused.
    pub fn parse(url: &str) -> Result<Endpoint> {
        let (rest, secure) = match url.split_once("://") {
            None => (url, false),
            Some(("http" | "ws", rest)) => (rest, false),
            Some(("https" | "wss", rest)) if cfg!(feature = "rustls") => (rest, true),
            Some(_) => return Err(Error::BadUrl(url.to_owned())),
        };
        let authority = rest.split('/').next().unwrap_or_default();
        let valid = authority
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !valid {
            return Err(Error::BadUrl(url.to_owned()));
        }
        Ok(Endpoint {
            authority: authority.to_owned(),
            secure,
            locale: None,
        })
    }

    /// The same server, read in `locale` (a BCP 47 tag; the server refuses one that is not).
    pub fn with_locale(self, locale: Option<String>) -> Endpoint {
        Endpoint { locale, ..self }
    }

    /// The URL of an HTTP path (`path` starts with `/`).
    pub fn http_url(&self, path: &str) -> String {
        let scheme = if self.secure { "https" } else { "http" };
        format!("{scheme}://{}{path}", self.authority)
    }

    /// The URL of a WebSocket path (`path` starts with `/`, query included).
    pub fn ws_path_url(&self, path: &str) -> String {
        let scheme = if self.secure { "wss" } else { "ws" };
        format!("{scheme}://{}{path}", self.authority)
    }

    /// The session WebSocket's URL, carrying `token` (and the locale, if any) in the query
    /// string. The locale is percent-encoded: the server answers a bad tag with a 400, and the
    /// URL must still be one.
    pub fn ws_url(&self, token: &str) -> String {
        match &self.locale {
            Some(locale) => {
                let encoded: String = locale
                    .bytes()
                    .map(|b| match b {
                        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' => {
                            char::from(b).to_string()
                        }
                        other => format!("%{other:02X}"),
                    })
                    .collect();
                self.ws_path_url(&format!("/v1/ws?token={token}&locale={encoded}"))
            }
            None => self.ws_path_url(&format!("/v1/ws?token={token}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_or_without_a_scheme() {
        for url in [
            "http://127.0.0.1:7350",
            "ws://127.0.0.1:7350/",
            "127.0.0.1:7350",
            "http://127.0.0.1:7350/v1/ws",
        ] {
            let endpoint = Endpoint::parse(url).expect(url);
            assert_eq!(endpoint.authority, "127.0.0.1:7350");
            assert!(!endpoint.secure);
        }
        for bad in ["ftp://x:1", "localhost", "http://:80", "x:port", "ws://x"] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
        // TLS only with the feature that can speak it.
        for tls in ["https://x:1", "wss://x:1"] {
            assert_eq!(
                Endpoint::parse(tls).is_ok(),
                cfg!(feature = "rustls"),
                "{tls}"
            );
        }
    }

    #[test]
    fn urls_are_built_from_the_authority() {
        let endpoint = Endpoint::parse("127.0.0.1:7350").expect("parses");
        assert_eq!(endpoint.http_url("/readyz"), "http://127.0.0.1:7350/readyz");
        assert_eq!(endpoint.ws_url("t"), "ws://127.0.0.1:7350/v1/ws?token=t");
        let secure = Endpoint {
            secure: true,
            ..endpoint
        };
        assert_eq!(secure.ws_url("t"), "wss://127.0.0.1:7350/v1/ws?token=t");
        let japanese = Endpoint::parse("127.0.0.1:7350")
            .expect("parses")
            .with_locale(Some("ja".into()));
        assert_eq!(
            japanese.ws_url("t"),
            "ws://127.0.0.1:7350/v1/ws?token=t&locale=ja"
        );
        assert_eq!(
            secure.http_url("/healthz"),
            "https://127.0.0.1:7350/healthz"
        );
    }
}
