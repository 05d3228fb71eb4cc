//! `baton team status`: team mode as this working copy sees it (docs/team.md):
//! which machine this is, the database (password hidden), whether it
//! answers, its schema version, writes waiting to be sent, and how other
//! machines' events arrive. Exits 1 when the database cannot be used.

use std::process::ExitCode;

use baton_config::Config;
use baton_usecases::Services;

/// Prints team mode's status (or its JSON).
pub fn status(config: Config, json: bool) -> anyhow::Result<ExitCode> {
    let svc = Services::read_only(config, env!("CARGO_PKG_VERSION"));
    let status = match baton_usecases::team::status(&svc) {
        Ok(s) => s,
        Err(e) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&e)?);
            } else {
                eprintln!("baton: {}", e.message);
            }
            return Ok(ExitCode::from(1));
        }
    };
    let Some(s) = status else {
        if json {
            println!("{}", serde_json::json!({"enabled": false}));
        } else {
            println!(
                "team mode is off: set BATON_DATABASE_URL (or [team] database_url in baton.toml) to share runs with your team (docs/team.md)"
            );
        }
        return Ok(ExitCode::SUCCESS);
    };
    let ok = s.connected;
    if json {
        let mut v = serde_json::to_value(&s)?;
        v["enabled"] = serde_json::Value::Bool(true);
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("machine     {} (id {})", s.machine.name, s.machine.id);
        println!("repository  {}", s.repository);
        println!("database    {}", s.database);
        println!("connected   {}", if ok { "yes" } else { "no" });
        println!(
            "schema      {} (this baton knows up to {})",
            s.schema_version
                .map_or_else(|| "unknown".to_string(), |v| v.to_string()),
            s.known_schema_version
        );
        println!("waiting     {} write(s) in .baton/team/outbox", s.queued);
        println!("events      {}", s.delivery);
        if let Some(p) = &s.problem {
            println!("problem     {p}");
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
