//! The admin API's HTTP plumbing: one request with its errors (Pulsar's `reason` when it
//! refuses), and an answer decoded into the endpoint's serde type.

use serde::Deserialize;

use super::Admin;

/// Errors of an admin call.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{method} {url}: {message}")]
    Http {
        method: &'static str,
        url: String,
        message: String,
    },
    #[error("{method} {url}: HTTP {status}: {body}")]
    Status {
        method: &'static str,
        url: String,
        status: u16,
        body: String,
    },
    #[error("{url}: unexpected answer: {message}")]
    Decode { url: String, message: String },
}

impl AdminError {
    pub fn status(&self) -> Option<u16> {
        match self {
            AdminError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// The body of a refusal, where Pulsar gives its reason.
#[derive(Deserialize)]
struct Refusal {
    reason: String,
}

impl Admin {
    /// One request: its status checked (Pulsar's `reason` on a refusal), the answer's
    /// `X-Pulsar-*` headers (names lower-cased) and its body as bytes.
    async fn request(
        &self,
        method: &'static str,
        path: &str,
        body: Option<String>,
    ) -> Result<(std::collections::BTreeMap<String, String>, Vec<u8>), AdminError> {
        let url = format!("{}{}", self.base, path);
        let req = match method {
            "GET" => self.http.get(&url),
            "PUT" => self.http.put(&url),
            "POST" => self.http.post(&url),
            "DELETE" => self.http.delete(&url),
            _ => unreachable!("admin method {method}"),
        };
        let req = match body {
            Some(b) => req.header("Content-Type", "application/json").body(b),
            None => req,
        };
        let resp = req.send().await.map_err(|e| AdminError::Http {
            method,
            url: url.clone(),
            message: error_chain(&e),
        })?;
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .filter(|(k, _)| k.as_str().starts_with("x-pulsar-"))
            .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        let bytes = resp.bytes().await.map(|b| b.to_vec()).unwrap_or_default();
        if !(200..300).contains(&status) {
            return Err(AdminError::Status {
                method,
                url,
                status,
                body: refusal_reason(String::from_utf8_lossy(&bytes).into_owned()),
            });
        }
        Ok((headers, bytes))
    }

    pub(super) async fn call(
        &self,
        method: &'static str,
        path: &str,
        body: Option<String>,
    ) -> Result<String, AdminError> {
        let (_, bytes) = self.request(method, path, body).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `GET path`: the answer's `X-Pulsar-*` headers (names lower-cased) and its body as bytes.
    pub(super) async fn get_raw(
        &self,
        path: &str,
    ) -> Result<(std::collections::BTreeMap<String, String>, Vec<u8>), AdminError> {
        self.request("GET", path, None).await
    }

    pub(super) fn decode<T: for<'de> Deserialize<'de>>(
        &self,
        path: &str,
        text: &str,
    ) -> Result<T, AdminError> {
        serde_json::from_str(text).map_err(|e| AdminError::Decode {
            url: format!("{}{}", self.base, path),
            message: format!("{e}: {}", text.chars().take(200).collect::<String>()),
        })
    }

    /// `GET path`, its answer decoded.
    pub(super) async fn get<T: for<'de> Deserialize<'de>>(
        &self,
        path: &str,
    ) -> Result<T, AdminError> {
        let text = self.call("GET", path, None).await?;
        self.decode(path, &text)
    }
}

/// What a refusal says, on one line of at most 300 characters: Pulsar's `reason`, else the
/// body as it came.
pub(super) fn refusal_reason(text: String) -> String {
    let reason = serde_json::from_str::<Refusal>(&text)
        .map(|r| r.reason)
        .unwrap_or(text);
    reason
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(300)
        .collect()
}

/// A reqwest error with its causes, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}
