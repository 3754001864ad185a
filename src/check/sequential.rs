//! The sequential-creates workload (G4): clients create persistent sequential nodes under
//! one parent, each with data of its own (`p401-17`), so that a node found at the end names
//! the create that made it. Checked for unique, increasing suffixes and, at the end, for
//! creates lost or applied twice.

use super::shared::{recover, Shared, OP_LIMIT};
use super::CheckError;
use std::time::Duration;
use tokio::time::timeout;
use ward_client::{Client, CreateMode, Error};

/// After each create: thousands of children are plenty, and the final listing reads them
/// all.
const PACE: Duration = Duration::from_millis(5);

/// One sequential create as its client saw it.
#[derive(Clone, Debug)]
pub struct SeqCreate {
    pub process: u64,
    pub data: String,
    pub invoked: u64,
    /// The node's name and when the reply came; `None`: outcome unknown.
    pub created: Option<(String, u64)>,
}

/// The ten-digit suffix of a sequential node's name.
pub fn suffix(name: &str) -> Option<i64> {
    let digits = name.get(name.len().checked_sub(10)?..)?;
    digits.parse().ok()
}

pub struct Worker {
    pub process: u64,
    addrs: String,
    client: Client,
    prefix: String,
    pub creates: Vec<SeqCreate>,
    pub sessions_lost: u32,
}

impl Worker {
    pub async fn new(process: u64, addrs: &str, dir: &str) -> Result<Worker, CheckError> {
        let client = super::connect(addrs).await?;
        let prefix = format!("{dir}/n-");
        Ok(Worker { process, addrs: addrs.to_owned(), client, prefix, creates: Vec::new(), sessions_lost: 0 })
    }

    pub async fn run(mut self, shared: Shared) -> Worker {
        let mut n = 0u64;
        while !shared.stopped() {
            n += 1;
            let data = format!("p{}-{n}", self.process);
            let invoked = shared.clock.now();
            let created =
                timeout(OP_LIMIT, self.client.create(&self.prefix, data.as_bytes(), CreateMode::PersistentSequential))
                    .await;
            let created = match created {
                Ok(Ok(path)) => {
                    let name = path.rsplit('/').next().unwrap_or_default().to_owned();
                    Some((name, shared.clock.now()))
                }
                // Refused before it was logged: it never happened.
                Ok(Err(Error::Unavailable)) => {
                    recover(&mut self.client, &self.addrs, &shared).await;
                    continue;
                }
                _ => None,
            };
            let known = created.is_some();
            self.creates.push(SeqCreate { process: self.process, data, invoked, created });
            if known {
                shared.completed();
                tokio::time::sleep(PACE).await;
            } else if recover(&mut self.client, &self.addrs, &shared).await {
                self.sessions_lost += 1;
            }
        }
        let _ = timeout(OP_LIMIT, self.client.close()).await;
        self
    }
}

/// Figures of a run.
pub fn summary(creates: &[SeqCreate], sessions_lost: u32) -> String {
    let acked = creates.iter().filter(|c| c.created.is_some()).count();
    format!(
        "{acked} sequential creates acknowledged, {} of unknown outcome, {sessions_lost} sessions replaced",
        creates.len() - acked
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_suffix_is_the_last_ten_digits() {
        assert_eq!(super::suffix("n-0000000042"), Some(42));
        assert_eq!(super::suffix("0000000007"), Some(7));
        assert_eq!(super::suffix("n-42"), None);
    }
}
