//! The JWT public key in dotnet-monitor's format — a JWK (EC P-256 / P-384, or RSA) as JSON,
//! base64url-encoded — and the verification of a bearer token against it (the algorithm comes
//! from the key, never from the token; `exp`, `aud`, `iss` and `sub` are checked).
//!
//! The JWK's member names are matched without regard to case and `null` members are skipped:
//! .NET's serializers write `{"Kty":"EC","Crv":"P-384","X":...,"D":null,...}` where RFC 7517
//! writes `{"kty":"EC","crv":"P-384","x":...}`; both are read.

use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use crate::error::AgentError;

/// The JWT audience dotnet-monitor's keys carry (the default when the config names none).
pub(crate) const DEFAULT_AUDIENCE: &str = "https://github.com/dotnet/dotnet-monitor";

/// The JWT issuer dotnet-monitor's `generatekey` writes (the default when the config names none).
pub(crate) const DEFAULT_ISSUER: &str =
    "https://github.com/dotnet/dotnet-monitor/generatekey+MonitorApiKey";

/// A public key that verifies bearer JWTs.
#[derive(Clone)]
pub(crate) struct VerifyKey {
    key: DecodingKey,
    algorithms: Vec<Algorithm>,
}

impl std::fmt::Debug for VerifyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyKey")
            .field("algorithms", &self.algorithms)
            .finish_non_exhaustive()
    }
}

/// The claims read (the library checks `exp`, `aud`, `iss`, `sub` itself): the subject,
/// which the audit log names the caller by.
#[derive(Deserialize)]
struct Claims {
    sub: String,
}

fn member<'a>(obj: &'a serde_json::Map<String, serde_json::Value>, name: &str) -> Option<&'a str> {
    obj.iter()
        .find(|(k, v)| k.eq_ignore_ascii_case(name) && !v.is_null())
        .and_then(|(_, v)| v.as_str())
}

impl VerifyKey {
    /// Parses dotnet-monitor's public key: base64url (padded or not) of a JWK's JSON; a bare
    /// JWK's JSON is taken too.
    pub(crate) fn parse(text: &str) -> Result<VerifyKey, AgentError> {
        let bad = |why: String| AgentError::Config(format!("auth.jwt.public_key: {why}"));
        let text = text.trim();
        let json = if text.starts_with('{') {
            text.as_bytes().to_vec()
        } else {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(text.trim_end_matches('='))
                .map_err(|e| bad(format!("not base64url ({e})")))?
        };
        let v: serde_json::Value =
            serde_json::from_slice(&json).map_err(|e| bad(format!("not a JWK's JSON ({e})")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad("not a JSON object".into()))?;
        if member(obj, "d").is_some() {
            return Err(bad(
                "this JWK holds a private key (\"d\"); give the public key only".into(),
            ));
        }
        let kty = member(obj, "kty").ok_or_else(|| bad("no \"kty\"".into()))?;
        let need = |n: &str| member(obj, n).ok_or_else(|| bad(format!("no \"{n}\"")));
        let lib = |e: jsonwebtoken::errors::Error| bad(e.to_string());
        match kty {
            "EC" => {
                let alg = match need("crv")? {
                    "P-256" => Algorithm::ES256,
                    "P-384" => Algorithm::ES384,
                    c => return Err(bad(format!("curve {c} is not supported (P-256, P-384)"))),
                };
                let key = DecodingKey::from_ec_components(need("x")?, need("y")?).map_err(lib)?;
                Ok(VerifyKey {
                    key,
                    algorithms: vec![alg],
                })
            }
            "RSA" => {
                let key = DecodingKey::from_rsa_components(need("n")?, need("e")?).map_err(lib)?;
                Ok(VerifyKey {
                    key,
                    algorithms: vec![
                        Algorithm::RS256,
                        Algorithm::RS384,
                        Algorithm::RS512,
                        Algorithm::PS256,
                        Algorithm::PS384,
                        Algorithm::PS512,
                    ],
                })
            }
            k => Err(bad(format!(
                "key type {k} is not supported (EC or RSA; a shared secret cannot be used)"
            ))),
        }
    }
}

/// A key and the claims a token must carry.
#[derive(Clone, Debug)]
pub(crate) struct JwtVerifier {
    key: VerifyKey,
    validation: Validation,
}

impl JwtVerifier {
    /// Verifies with `public_key` (see [`VerifyKey::parse`]); tokens must carry these claims
    /// (`None`: dotnet-monitor's defaults).
    pub(crate) fn new(
        public_key: &str,
        issuer: Option<&str>,
        audience: Option<&str>,
        subject: &str,
    ) -> Result<JwtVerifier, AgentError> {
        let key = VerifyKey::parse(public_key)?;
        let mut validation = Validation::new(key.algorithms[0]);
        validation.algorithms = key.algorithms.clone();
        validation.leeway = 30;
        validation.set_audience(&[audience.unwrap_or(DEFAULT_AUDIENCE)]);
        validation.set_issuer(&[issuer.unwrap_or(DEFAULT_ISSUER)]);
        validation.sub = Some(subject.to_string());
        validation.set_required_spec_claims(&["exp", "aud", "iss", "sub"]);
        Ok(JwtVerifier { key, validation })
    }

    /// The token's subject when `token` is signed by the key and its claims pass.
    pub(crate) fn verify(&self, token: &str) -> Option<String> {
        jsonwebtoken::decode::<Claims>(token, &self.key.key, &self.validation)
            .ok()
            .map(|t| t.claims.sub)
    }
}
