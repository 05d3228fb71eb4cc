//! The team database URL: checked once, shown only with its password
//! hidden.

use std::str::FromStr;

use sqlx::postgres::PgConnectOptions;

use crate::TeamError;

/// `url` with the password (in the user part or a `password=` parameter)
/// replaced by `***`. Safe to print, log and put in error messages.
pub fn redact(url: &str) -> String {
    let mut out = url.to_string();
    // The user part: [scheme://]user:password@host… (without a scheme too:
    // a malformed URL is shown in error messages). The user part ends at
    // the last `@` before the parameters, so an unencoded `/` or `@` in
    // the password still hides it all.
    {
        let rest_start = out.find("://").map_or(0, |i| i + 3);
        let authority_end = out[rest_start..]
            .find(['?', '#'])
            .map_or(out.len(), |i| rest_start + i);
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let userinfo = &out[rest_start..rest_start + at];
            if let Some(colon) = userinfo.find(':') {
                let from = rest_start + colon + 1;
                let to = rest_start + at;
                out.replace_range(from..to, "***");
            }
        }
    }
    // A password given as a parameter.
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let redacted: Vec<String> = query
            .split('&')
            .map(|pair| {
                let key = pair.split('=').next().unwrap_or_default();
                if key.eq_ignore_ascii_case("password") {
                    format!("{key}=***")
                } else {
                    pair.to_string()
                }
            })
            .collect();
        out = format!("{head}{}", redacted.join("&"));
    }
    out
}

/// Parses `url` into connection options, or says in plain words what is
/// wrong (without quoting the password).
pub fn parse(url: &str) -> Result<PgConnectOptions, TeamError> {
    let bad = |reason: &str| TeamError::BadUrl {
        url: redact(url),
        reason: reason.to_string(),
    };
    let trimmed = url.trim();
    if trimmed.is_empty() {
        return Err(bad("it is empty"));
    }
    let scheme = trimmed.split("://").next().unwrap_or_default();
    if !trimmed.contains("://") || !(scheme == "postgres" || scheme == "postgresql") {
        return Err(bad("it must start with postgres:// or postgresql://"));
    }
    PgConnectOptions::from_str(trimmed).map_err(|e| {
        // The parser's message may quote the URL: keep only its redacted form.
        let said = e.to_string().replace(trimmed, &redact(trimmed));
        bad(&said)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("postgres://ann:s3cret@db.example:5432/baton"),
            "postgres://ann:***@db.example:5432/baton"
        );
        assert_eq!(
            redact("postgresql://ann:p%40ss@db/baton?sslmode=require&password=x"),
            "postgresql://ann:***@db/baton?sslmode=require&password=***"
        );
        assert_eq!(redact("postgres://ann@db/baton"), "postgres://ann@db/baton");
        assert_eq!(
            redact("postgres://ann:pa/ss@w0rd@db/baton"),
            "postgres://ann:***@db/baton"
        );
        // An @ in the path is not a user part.
        assert_eq!(redact("postgres://db/ba@ton"), "postgres://db/ba@ton");
    }

    #[test]
    fn a_wrong_url_is_a_clear_error_without_its_password() {
        for url in [
            "",
            "mysql://ann:s3cret@db/x",
            "ann:s3cret@db/x",
            "postgres://ann:s3cret@db:notaport/x",
        ] {
            let e = parse(url).unwrap_err();
            let text = e.to_string();
            assert!(matches!(e, TeamError::BadUrl { .. }), "{url}: {text}");
            assert!(!text.contains("s3cret"), "{text}");
            assert!(text.contains("BATON_DATABASE_URL"), "{text}");
        }
        assert!(parse("postgres://ann:s3cret@127.0.0.1:5432/baton").is_ok());
    }
}
