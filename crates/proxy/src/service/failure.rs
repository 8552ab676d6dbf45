//! What a request that failed before or while proxying is answered: the
//! status chosen from Pingora's error (its type and source) and the
//! plain-text body that names the cause for the operator and the client.

use pingora::{Error, ErrorSource, ErrorType};

use super::facts::unreachable;

/// The status for `e`: the error's own HTTP status, 504 for a timeout, 502
/// for the origin's failures (and an internal one before an origin was
/// chosen or routed), 400 for a client's malformed request, 0 when the
/// client's connection is gone (nothing can be written), else 500.
pub(super) fn status(e: &Error, has_upstream: bool) -> u16 {
    match e.etype() {
        ErrorType::HTTPStatus(code) => *code,
        ErrorType::ConnectTimedout | ErrorType::ReadTimedout | ErrorType::WriteTimedout => 504,
        _ => match e.esource() {
            ErrorSource::Upstream => 502,
            ErrorSource::Downstream => match e.etype() {
                ErrorType::WriteError | ErrorType::ReadError | ErrorType::ConnectionClosed => 0,
                _ => 400,
            },
            ErrorSource::Internal | ErrorSource::Unset => {
                if !has_upstream || matches!(e.etype(), ErrorType::ConnectNoRoute) {
                    502
                } else {
                    500
                }
            }
        },
    }
}

/// The body answered with `code` for `e`; `decode_aborted` when the origin's
/// compressed body could not be decoded within limits.
pub(super) fn text(code: u16, e: &Error, decode_aborted: bool, has_upstream: bool) -> String {
    match code {
        504 => "504 Gateway Timeout: the origin server did not answer in time\n".to_string(),
        502 if decode_aborted => {
            "502 Bad Gateway: the origin server's compressed response could not be decoded within limits\n".to_string()
        }
        502 if unreachable(e.etype()) || !has_upstream => {
            "502 Bad Gateway: the origin server could not be reached\n".to_string()
        }
        502 if matches!(
            e.etype(),
            ErrorType::InvalidHTTPHeader | ErrorType::H1Error | ErrorType::H2Error | ErrorType::InvalidH2
        ) =>
        {
            "502 Bad Gateway: the origin server sent a response that cannot be forwarded\n".to_string()
        }
        502 => "502 Bad Gateway: the connection to the origin server failed\n".to_string(),
        400 => "400 Bad Request\n".to_string(),
        other => format!("{other} Error\n"),
    }
}
