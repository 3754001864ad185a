//! The command line wins over the environment, which wins over the config file, which wins
//! over the defaults (docs/operations.md "Configuration"); where the data lives is decided
//! by the source of highest precedence that says anything about it.

use super::write_config;
use std::time::Duration;
use ward_testkit::{bounded, connect_with, ServerProcess, TempDir};

/// The session timeout a client asking for 1 s gets: the server's minimum.
async fn min_session_timeout(server: &ServerProcess) -> Duration {
    connect_with(&server.addr_str(), Duration::from_millis(1000)).await.session_timeout()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_beats_the_environment_which_beats_the_file() {
    let dir = TempDir::new("config-precedence");
    let file = write_config(dir.path(), "min-session-timeout-ms = 5000\ndata-dir = \"from-file\"\nsegment-mb = 1\n");
    let listeners = ["--listen", "127.0.0.1:0", "--zk-listen", "off", "--admin-listen", "off"];
    let env = [("WARD_MIN_SESSION_TIMEOUT_MS", "6000")];
    let start = |flags: &[&str], env: &[(&str, &str)]| {
        let flags: Vec<&str> = ["--config", &file].iter().chain(&listeners).chain(flags).copied().collect();
        ServerProcess::builder().bare().flags(&flags).envs(env).start()
    };
    bounded(async {
        let all = start(&["--min-session-timeout-ms", "7000", "--in-memory"], &env);
        assert_eq!(min_session_timeout(&all).await, Duration::from_millis(7000), "flag over variable and file");
        assert!(!all.dir().join("from-file").exists(), "--in-memory on the command line overrides the file's data-dir");

        let env_and_file = start(&[], &env);
        assert_eq!(min_session_timeout(&env_and_file).await, Duration::from_millis(6000), "variable over file");
        assert!(env_and_file.dir().join("from-file/LOCK").exists(), "the file's data-dir");

        let file_only = start(&[], &[]);
        assert_eq!(min_session_timeout(&file_only).await, Duration::from_millis(5000), "file over default");

        let default = ServerProcess::builder().bare().flags(&listeners).flags(&["--in-memory"]).start();
        assert_eq!(min_session_timeout(&default).await, Duration::from_millis(4000), "the default");
    })
    .await;
}
