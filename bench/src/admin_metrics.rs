//! A member's figures from its admin listener's `/metrics` (Prometheus text), for what the
//! client protocol does not tell: the member's own Raft term.

use crate::sys::{Error, Result};
use std::net::SocketAddr;
use std::time::Duration;

/// How long one `/metrics` request may take (a member under load answers slowly).
const LIMIT: Duration = Duration::from_secs(5);

/// The member's current Raft term (`ward_raft_term`).
pub async fn raft_term(admin: SocketAddr) -> Result<u64> {
    let body = tokio::task::spawn_blocking(move || ward_procs::http::try_get(admin, "/metrics", LIMIT))
        .await
        .map_err(|e| Error(format!("/metrics task: {e}")))?
        .map_err(|e| Error(format!("/metrics on {admin}: {e}")))
        .and_then(|(status, body)| match status {
            200 => Ok(body),
            other => Err(Error(format!("/metrics on {admin}: HTTP {other}"))),
        })?;
    let term =
        figure(&body, "ward_raft_term").ok_or_else(|| Error(format!("no ward_raft_term in {admin}'s /metrics")))?;
    Ok(term as u64)
}

/// The value of the unlabelled sample `name` in a Prometheus text exposition.
fn figure(body: &str, name: &str) -> Option<f64> {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.split_once(' ').filter(|(n, _)| *n == name).and_then(|(_, v)| v.trim().parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure_reads_an_unlabelled_sample() {
        let body = "# HELP ward_raft_term The current Raft term\n# TYPE ward_raft_term gauge\nward_raft_term 7\n\
                    ward_raft_term_x 9\nward_raft_role{role=\"leader\"} 1\n";
        assert_eq!(figure(body, "ward_raft_term"), Some(7.0));
        assert_eq!(figure(body, "ward_raft_is_leader"), None);
    }
}
