//! Campaigns for leadership, leads until Ctrl-C or until leadership is lost, then resigns.
//!
//! `cargo run -p ward-client --example election -- node-1` (start several with other
//! names). The server's address is `$WARD_SERVER` (default 127.0.0.1:7181).

mod common;

use std::process::ExitCode;
use ward_client::{Client, Error};

#[tokio::main]
async fn main() -> ExitCode {
    let name = std::env::args().nth(1).unwrap_or_else(|| format!("pid-{}", std::process::id()));
    let server = common::server();
    common::exit(&server, run(&server, &name).await)
}

async fn run(server: &str, name: &str) -> Result<(), Error> {
    let client = Client::connect(server).await?;
    let election = client.election("/election/demo");
    if let Some(leader) = election.leader().await? {
        println!("current leader: {}", String::from_utf8_lossy(&leader.data));
    }
    let leadership = election.campaign(name.as_bytes()).await?;
    println!("{name} leads (token {})", leadership.fencing_token());
    tokio::select! {
        _ = leadership.lost() => println!("{name} lost leadership"),
        _ = tokio::signal::ctrl_c() => {
            leadership.resign().await?;
            println!("{name} resigned");
        }
    }
    client.close().await
}
