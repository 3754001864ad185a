//! The `--config` file: TOML whose keys are the option names (`listen = "127.0.0.1:7181"`,
//! `min-session-timeout-ms = 4000`, `in-memory = true`). Each key is read on its own, so
//! that an unknown key, a value of the wrong type or a bad value is reported by its name.

use super::settings::{keys, Settings};
use crate::error::ConfigError;
use std::path::Path;

pub fn load(path: &Path) -> Result<Settings, ConfigError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile { path: path.to_path_buf(), source })?;
    parse(path, &text)
}

fn parse(path: &Path, text: &str) -> Result<Settings, ConfigError> {
    let table: toml::Table = toml::from_str(text)
        .map_err(|e| ConfigError::FileSyntax { path: path.to_path_buf(), message: e.to_string().trim().to_string() })?;
    let known = keys();
    let mut settings = Settings::default();
    for (key, value) in table {
        if !known.contains(&key) {
            return Err(ConfigError::UnknownKey { path: path.to_path_buf(), key });
        }
        let one = toml::Table::from_iter([(key.clone(), value)]);
        let one: Settings = toml::Value::Table(one).try_into().map_err(|e: toml::de::Error| ConfigError::BadKey {
            path: path.to_path_buf(),
            key,
            message: e.message().trim().to_string(),
        })?;
        settings = one.and(settings);
    }
    settings
        .check_data_choice()
        .map_err(|why| ConfigError::DataChoice { source_name: format!("config file {}", path.display()), why })?;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_err(text: &str) -> String {
        match parse(Path::new("ward.toml"), text) {
            Ok(s) => panic!("{text:?} was accepted: {s:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn reads_every_kind_of_value() {
        let text = "listen = \"localhost:7181\"\nzk-listen = \"off\"\nin-memory = true\nsegment-mb = 2\n\
                    log-format = \"json\"\n[ensemble]\n1 = \"127.0.0.1:7191\"\n2 = \"h:7191\"\n";
        let s = parse(Path::new("ward.toml"), text).expect("parse");
        assert_eq!(s.listen.map(|a| a.to_string()), Some("localhost:7181".into()));
        assert_eq!(s.zk_listen.map(|a| a.to_string()), Some("off".into()));
        assert_eq!((s.in_memory, s.segment_mb.map(|n| n.0)), (Some(true), Some(2)));
        assert_eq!(s.ensemble.map(|m| m.to_string()), Some("1=127.0.0.1:7191,2=h:7191".into()));
    }

    #[test]
    fn names_the_key_at_fault() {
        assert_eq!(parse_err("lissten = \"a:1\""), "config file ward.toml: unknown key \"lissten\"");
        assert_eq!(parse_err("config = \"x\""), "config file ward.toml: unknown key \"config\"");
        let wrong_type = parse_err("min-session-timeout-ms = \"abc\"");
        assert!(
            wrong_type.starts_with("config file ward.toml: key \"min-session-timeout-ms\": invalid type"),
            "{wrong_type}"
        );
        let bad = parse_err("dev-ensemble = 12");
        assert_eq!(bad, "config file ward.toml: key \"dev-ensemble\": must be between 1 and 9");
        let bad = parse_err("zk-listen = \"nowhere\"");
        assert!(bad.starts_with("config file ward.toml: key \"zk-listen\": "), "{bad}");
        let both = parse_err("data-dir = \"d\"\nin-memory = true");
        assert_eq!(both, "config file ward.toml: both data-dir and in-memory: choose one");
        assert!(parse_err("listen = ").starts_with("config file ward.toml: TOML parse error"));
    }
}
