//! What stops the server before it serves, and how it says so (docs/operations.md
//! "Configuration"): a bad key or value names the key or variable and exits 2, as a bad
//! flag does; an explicit address that is taken names the listener and exits 1; a taken
//! default port of the ZooKeeper or admin listener is said on stdout and the server runs.
//! The first screen ends with the web console's address and a first command to try.
//! `--help` and `--version` print to stdout and exit 0.

use super::{assert_refused, run_to_exit, write_config, Spawned};
use std::net::TcpListener;
use ward_testkit::server::STARTUP;
use ward_testkit::TempDir;

/// Listeners that cannot meet another test's, for a server that should not start.
const QUIET: [&str; 7] = ["--listen", "127.0.0.1:0", "--zk-listen", "off", "--admin-listen", "off", "--in-memory"];

#[test]
fn a_bad_key_or_value_in_the_file_stops_the_server_naming_the_key() {
    let cases = [
        ("lissten = \"127.0.0.1:0\"", "unknown key \"lissten\""),
        ("min-session-timeout-ms = \"abc\"", "key \"min-session-timeout-ms\": invalid type: string \"abc\""),
        ("dev-ensemble = 12", "key \"dev-ensemble\": must be between 1 and 9"),
        ("zk-listen = \"nowhere\"", "key \"zk-listen\": \"nowhere\" is not HOST:PORT"),
        ("[ensemble]\n0 = \"127.0.0.1:7191\"", "key \"ensemble\": member ids start at 1"),
        ("listen = ", "TOML parse error"),
    ];
    for (text, message) in cases {
        let dir = TempDir::new("config-bad");
        let path = write_config(dir.path(), text);
        let args: Vec<&str> = ["--config", &path].into_iter().chain(QUIET).collect();
        let out = run_to_exit(dir.path(), &args, &[]);
        assert_refused(&out, 2, &format!("ward-server: config file {}: {message}", path));
    }
}

#[test]
fn a_bad_variable_stops_the_server_naming_it() {
    let cases = [
        ("WARD_MIN_SESSION_TIMEOUT_MS", "abc", "WARD_MIN_SESSION_TIMEOUT_MS: invalid value \"abc\": invalid digit"),
        ("WARD_ZK_LISTEN", "nowhere", "WARD_ZK_LISTEN: invalid value \"nowhere\""),
        ("WARD_LOG_FORMAT", "xml", "WARD_LOG_FORMAT: invalid value \"xml\": expected one of text, json"),
        ("WARD_IN_MEMORY", "perhaps", "WARD_IN_MEMORY: invalid value \"perhaps\""),
        ("WARD_CONFIG", "/nonexistent/ward.toml", "config file /nonexistent/ward.toml: No such file"),
    ];
    for (var, value, message) in cases {
        let dir = TempDir::new("config-bad-env");
        let out = run_to_exit(dir.path(), &QUIET, &[(var, value)]);
        assert_refused(&out, 2, &format!("ward-server: {message}"));
    }
}

#[test]
fn options_that_do_not_go_together_are_refused() {
    let dir = TempDir::new("config-together");
    let path = write_config(dir.path(), "min-session-timeout-ms = 5000\ndata-dir = \"d\"\nin-memory = true\n");
    let out = run_to_exit(dir.path(), &["--config", &path], &[]);
    assert_refused(&out, 2, "both data-dir and in-memory: choose one");
    let path = write_config(dir.path(), "min-session-timeout-ms = 5000\n");
    let args: Vec<&str> = ["--config", &path, "--max-session-timeout-ms", "4000"].into_iter().chain(QUIET).collect();
    let out = run_to_exit(dir.path(), &args, &[]);
    assert_refused(&out, 2, "--min-session-timeout-ms (5000) is above --max-session-timeout-ms (4000)");
    // A super digest that is not USER:HASH is refused without being repeated: it may be a
    // password typed in the wrong place.
    let args: Vec<&str> = ["--super-digest", "hunter2"].into_iter().chain(QUIET).collect();
    let out = run_to_exit(dir.path(), &args, &[]);
    assert_refused(&out, 2, "--super-digest: the super digest must be USER:HASH");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("hunter2"), "the value is not repeated");
    let args: Vec<&str> = ["--heartbeat-ms", "100", "--election-timeout-ms", "150"].into_iter().chain(QUIET).collect();
    let out = run_to_exit(dir.path(), &args, &[]);
    assert_refused(&out, 2, "--election-timeout-ms must be at least twice --heartbeat-ms");
    let out = run_to_exit(dir.path(), &["--listen", "no-such-host.invalid:7181", "--in-memory"], &[]);
    assert_refused(&out, 2, "--listen no-such-host.invalid:7181: cannot resolve the host name");
}

#[test]
fn an_explicit_address_that_is_taken_names_the_listener() {
    let holder = TcpListener::bind("127.0.0.1:0").expect("bind a port to take");
    let taken = holder.local_addr().expect("its address").to_string();
    let dir = TempDir::new("config-taken");
    let refused = |flags: &[&str], env: &[(&str, &str)], key: &str, listener: &str| {
        let durable = ["--listen", "127.0.0.1:0", "--data-dir", "data", "--segment-mb", "1"];
        let args: Vec<&str> = durable.iter().chain(flags).copied().collect();
        let out = run_to_exit(dir.path(), &args, env);
        assert_refused(&out, 1, &format!("--{key} {taken}: cannot listen (the {listener} listener)"));
    };
    refused(&["--listen", &taken, "--zk-listen", "off", "--admin-listen", "off"], &[], "listen", "client");
    refused(&["--zk-listen", &taken, "--admin-listen", "off"], &[], "zk-listen", "zookeeper");
    let admin_file = write_config(dir.path(), &format!("admin-listen = \"{taken}\"\n"));
    refused(&["--zk-listen", "off"], &[("WARD_CONFIG", &admin_file)], "admin-listen", "admin");
    let ensemble = format!("1={taken}");
    let member = ["--id", "1", "--ensemble", &ensemble, "--zk-listen", "off", "--admin-listen", "off"];
    refused(&member, &[], "peer-listen", "peer");
}

/// The default ZooKeeper and admin ports, taken (by this test, or by whatever holds them
/// already): the server runs without those listeners and says so on stdout, after the
/// listening line.
#[test]
fn a_taken_default_port_is_said_on_stdout() {
    let hold = |port: u16| match TcpListener::bind(("127.0.0.1", port)) {
        Ok(listener) => Some(listener),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => None,
        Err(e) => panic!("take 127.0.0.1:{port}: {e}"),
    };
    let (_zk, _admin) = (hold(2181), hold(7180));
    let mut server = Spawned::start(&["--listen", "127.0.0.1:0", "--in-memory"], &[]);
    server.line_starting("ward-server listening on ", STARTUP);
    let zk = server.line_starting("ward-server zookeeper not listening: ", STARTUP);
    assert!(zk.contains("127.0.0.1:2181 is taken") && zk.ends_with("use --zk-listen ADDR"), "{zk}");
    let admin = server.line_starting("ward-server admin not listening: ", STARTUP);
    assert!(admin.contains("127.0.0.1:7180 is taken") && admin.ends_with("use --admin-listen ADDR"), "{admin}");
    server.terminate();
}

/// After the listening lines, the first screen says what to do next (docs/operations.md
/// "Running a server"): the web console's address when the admin listener runs, and a first
/// `ward` command against this server. The listening lines keep their prefixes and order.
#[test]
fn the_first_screen_names_the_console_and_a_first_command() {
    let args = ["--listen", "127.0.0.1:0", "--zk-listen", "off", "--admin-listen", "127.0.0.1:0", "--in-memory"];
    let mut server = Spawned::start(&args, &[]);
    let client = server.line_starting("ward-server listening on ", STARTUP);
    let client = client.trim_start_matches("ward-server listening on ").to_string();
    let admin = server.line_starting("ward-server admin listening on ", STARTUP);
    let admin = admin.trim_start_matches("ward-server admin listening on ").to_string();
    assert_eq!(server.line_starting("web console: ", STARTUP), format!("web console: http://{admin}/"));
    assert_eq!(server.line_starting("try: ", STARTUP), format!("try: ward --server {client} ls /"));
    server.terminate();
}

#[test]
fn help_and_version_print_to_stdout_and_a_bad_flag_exits_2() {
    let dir = TempDir::new("config-help");
    let version = run_to_exit(dir.path(), &["--version"], &[]);
    assert_eq!(version.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), format!("ward-server {}", env!("CARGO_PKG_VERSION")));
    let help = run_to_exit(dir.path(), &["--help"], &[]);
    let text = String::from_utf8_lossy(&help.stdout);
    assert_eq!(help.status.code(), Some(0));
    assert!(text.contains("Usage: ward-server [OPTIONS]") && text.contains("--min-session-timeout-ms"), "{text}");
    assert!(text.contains("WARD_") && help.stderr.is_empty(), "{text}");
    let bad = run_to_exit(dir.path(), &["--bogus"], &[]);
    assert_refused(&bad, 2, "unexpected argument '--bogus'");
    assert!(bad.stdout.is_empty());
}
