//! The `ward` CLI over TLS (docs/security.md "TLS", guarantee G22): with `--tls-ca` (and
//! `--tls-cert`/`--tls-key` where the server requires a client certificate) it works as over
//! plain TCP; without them, with another CA or with a server name the certificate does not
//! carry, it fails (exit 1, saying so) and the server serves on.

use crate::harness::*;
use ward_testkit::tls::TestCa;
use ward_testkit::TempDir;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_works_over_tls_and_is_refused_without_the_right_settings() {
    let dir = TempDir::new("cli-tls");
    let (ca, other_ca) = (TestCa::new(dir.path(), "ca"), TestCa::new(dir.path(), "other-ca"));
    let (server_cert, client) = (ca.server("server"), ca.client("cli", "cli", "Example"));
    let flags =
        ["--tls-cert", server_cert.cert_str(), "--tls-key", server_cert.key_str(), "--tls-client-ca", ca.file_str()];
    let server = ServerProcess::builder().in_memory().flags(&flags).start();
    let addr = server.addr_str();
    let tls = ["--tls-ca", ca.file_str(), "--tls-cert", client.cert_str(), "--tls-key", client.key_str()];
    bounded(async {
        let with = |args: &[&'static str]| [&tls[..], args].concat();
        let out = run_cli(&addr, &with(&["create", "/tls", "hello"])).await.success();
        assert_eq!(out.stdout, "/tls\n");
        assert_eq!(run_cli(&addr, &with(&["get", "/tls"])).await.success().stdout, "hello\n");
        let failing: [(&str, Vec<&str>); 4] = [
            ("plain TCP", vec!["get", "/tls"]),
            ("no client certificate", vec!["--tls-ca", ca.file_str(), "get", "/tls"]),
            (
                "another CA",
                vec![
                    "--tls-ca",
                    other_ca.file_str(),
                    "--tls-cert",
                    client.cert_str(),
                    "--tls-key",
                    client.key_str(),
                    "get",
                    "/tls",
                ],
            ),
            ("another server name", with(&["--tls-server-name", "ward.example.com", "get", "/tls"])),
        ];
        for (what, args) in failing {
            let out = run_cli(&addr, &args).await;
            assert_eq!(out.code(), Some(1), "{what}: {out:?}");
            assert!(out.stderr.contains("ward: connect to"), "{what}: {out:?}");
        }
        assert_eq!(run_cli(&addr, &with(&["get", "/tls"])).await.success().stdout, "hello\n");
    })
    .await;
}
