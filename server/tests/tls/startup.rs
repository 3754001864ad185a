//! G22 at startup (docs/security.md "TLS", "Files and modes"; docs/operations.md
//! "Configuration"): half-configured TLS and a key any user can read stop the server with a
//! message saying what is wrong (exit 2, as for a bad flag); the TLS options come from a
//! config file and from `WARD_*` variables like every other option.

use super::{served, session, trusting, Pki};
use std::process::Command;
use ward_testkit::run::try_run;
use ward_testkit::{bounded, ServerProcess, TempDir, DEADLINE};

/// Runs `ward-server ARGS` (quiet listeners, in memory) to its exit; its exit code and
/// stderr.
fn refused_start(args: &[&str]) -> (Option<i32>, String) {
    let dir = TempDir::new("tls-refused");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ward-server"));
    cmd.args(["--listen", "127.0.0.1:0", "--zk-listen", "off", "--admin-listen", "off"]).args(args);
    cmd.current_dir(dir.path()).env_remove("WARD_CONFIG");
    let out = try_run(&mut cmd, b"", DEADLINE).unwrap_or_else(|why| panic!("{why}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("listening on"), "it listened: {stdout}");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn half_configured_tls_is_refused_naming_what_is_missing() {
    let pki = Pki::new();
    let (cert, key, ca) = (pki.server.cert_str(), pki.server.key_str(), pki.ca.file_str());
    let member = ["--data-dir", "data", "--ensemble", "1=127.0.0.1:1", "--id", "1", "--peer-listen", "127.0.0.1:0"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--in-memory", "--tls-cert", cert], "--tls-cert needs --tls-key: TLS is half-configured"),
        (vec!["--in-memory", "--tls-key", key], "--tls-key needs --tls-cert: TLS is half-configured"),
        (vec!["--in-memory", "--tls-client-ca", ca], "--tls-client-ca needs --tls-cert and --tls-key"),
        (vec!["--in-memory", "--zk-tls-listen", "127.0.0.1:0"], "--zk-tls-listen needs --tls-cert and --tls-key"),
        (
            vec!["--in-memory", "--tls-cert", cert, "--tls-key", key, "--tls-client-auth", "optional"],
            "--tls-client-auth needs --tls-client-ca",
        ),
        (
            [&member[..], &["--peer-tls-cert", cert, "--peer-tls-key", key]].concat(),
            "--peer-tls-cert needs --peer-tls-ca: TLS is half-configured",
        ),
        ([&member[..], &["--peer-tls-ca", ca]].concat(), "--peer-tls-ca needs --peer-tls-cert and --peer-tls-key"),
        (
            vec!["--in-memory", "--peer-tls-cert", cert, "--peer-tls-key", key, "--peer-tls-ca", ca],
            "are for ensemble members",
        ),
    ];
    for (args, message) in cases {
        let (code, stderr) = refused_start(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: want {message:?} in:\n{stderr}");
    }
}

#[test]
fn a_key_any_user_can_read_stops_the_server() {
    let pki = Pki::new();
    let key = std::fs::read_to_string(&pki.server.key).expect("read the key");
    ward_testkit::tls::write(&pki.server.key, &key, 0o644);
    let (cert, key, ca) = (pki.server.cert_str(), pki.server.key_str(), pki.ca.file_str());
    let (code, stderr) = refused_start(&["--in-memory", "--tls-cert", cert, "--tls-key", key]);
    assert_eq!(code, Some(2), "{stderr}");
    let message = format!("TLS: {key}: a private key any user can read (mode 644)");
    assert!(stderr.contains(&message), "want {message:?} in:\n{stderr}");
    // The peer link's key too.
    let member = ["--data-dir", "data", "--ensemble", "1=127.0.0.1:1", "--id", "1", "--peer-listen", "127.0.0.1:0"];
    let peer = [&member[..], &["--peer-tls-cert", cert, "--peer-tls-key", key, "--peer-tls-ca", ca]].concat();
    let (code, stderr) = refused_start(&peer);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(&message), "want {message:?} in:\n{stderr}");
    // A key file that holds no key.
    let not_a_key = pki.dir.path().join("not-a-key.pem");
    let ca_text = std::fs::read_to_string(pki.ca.file()).expect("read the CA");
    ward_testkit::tls::write(&not_a_key, &ca_text, 0o600);
    let not_a_key = not_a_key.to_str().expect("UTF-8 path");
    let (code, stderr) = refused_start(&["--in-memory", "--tls-cert", cert, "--tls-key", not_a_key]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(&format!("TLS: {not_a_key}: no PRIVATE KEY in it")), "{stderr}");
}

/// Every TLS option as `(key, value)`, for a one-member ensemble whose clients may show a
/// certificate from the CA.
fn options(pki: &Pki) -> Vec<(&'static str, String)> {
    let text = |s: &str| s.to_string();
    vec![
        ("listen", text("127.0.0.1:0")),
        ("zk-listen", text("off")),
        ("admin-listen", text("off")),
        ("zk-tls-listen", text("127.0.0.1:0")),
        ("data-dir", text("data")),
        ("ensemble", text("1=127.0.0.1:7191")),
        ("id", text("1")),
        ("peer-listen", text("127.0.0.1:0")),
        ("tls-cert", text(pki.server.cert_str())),
        ("tls-key", text(pki.server.key_str())),
        ("tls-client-ca", text(pki.ca.file_str())),
        ("tls-client-auth", text("optional")),
        ("peer-tls-cert", text(pki.server.cert_str())),
        ("peer-tls-key", text(pki.server.key_str())),
        ("peer-tls-ca", text(pki.ca.file_str())),
    ]
}

/// What the options above make observable: Ward's listener speaks TLS, takes clients
/// without a certificate (optional) and refuses one from another CA (the client CA); the
/// secure ZooKeeper port listens (its banner); the peer link has TLS (the member's log).
async fn check(server: &ServerProcess, pki: &Pki) {
    let addr = server.addr_str();
    let anonymous = session(&addr, Some(trusting(&pki.ca, None))).await.expect("tls-cert, tls-auth optional");
    served(&anonymous, "/configured").await;
    super::refused(&addr, Some(trusting(&pki.ca, Some(&pki.stranger))), "tls-client-ca").await;
    super::refused(&addr, None, "plain TCP").await;
    std::net::TcpStream::connect(server.zk_tls_addr()).expect("zk-tls-listen listens");
    let log = server.log_tail();
    assert!(log.lines().any(|l| l.contains("ensemble member open") && l.contains("peer_tls=true")), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_sets_the_tls_options() {
    let pki = Pki::new();
    let dir = TempDir::new("tls-config");
    let toml = |(key, value): &(&str, String)| match value.parse::<u64>() {
        Ok(n) => format!("{key} = {n}\n"),
        Err(_) => format!("{key} = \"{value}\"\n"),
    };
    let text: String = options(&pki).iter().map(toml).collect();
    let path = dir.path().join("ward.toml");
    std::fs::write(&path, text).expect("write the config file");
    let flags = ["--config", path.to_str().expect("UTF-8 path")];
    let server = ServerProcess::builder().bare().zk_tls().flags(&flags).start();
    bounded(check(&server, &pki)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_variables_set_the_tls_options() {
    let pki = Pki::new();
    let vars: Vec<(String, String)> = options(&pki)
        .into_iter()
        .map(|(key, value)| (format!("WARD_{}", key.to_uppercase().replace('-', "_")), value))
        .collect();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = ServerProcess::builder().bare().zk_tls().envs(&vars).start();
    bounded(check(&server, &pki)).await;
}
