//! Where nodes are (latitude/longitude on the Earth, or a point on Inet's plane) and the
//! propagation delay that the distance between two of them implies. Shared by every importer.

use netloom_time::Duration;

/// Mean Earth radius (IUGG), for great-circle distances.
pub const EARTH_RADIUS_KM: f64 = 6371.0;
/// The speed of light in vacuum, the fastest a signal may be given (`--km-per-s`).
pub const LIGHT_KM_PER_S: f64 = 299_792.458;
/// Speed of light in optical fibre: c divided by a refractive index of about 1.5, i.e. about
/// 2/3 c. The default speed for delays from distances.
pub const FIBRE_KM_PER_S: f64 = 200_000.0;

pub(crate) use crate::model::Position;

/// Great-circle distance by the haversine formula (accurate for short distances too).
pub(crate) fn great_circle_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = p2 - p1;
    let dl = (lon2 - lon1).to_radians();
    let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_KM * h.sqrt().min(1.0).asin()
}

/// How distances become delays.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Speed {
    /// Kilometres per second, for positions on the Earth.
    pub km_per_s: f64,
    /// Nanoseconds per unit, for positions on a plane.
    pub ns_per_unit: u64,
}

/// The longest delay a distance may imply: a minute, far beyond any link on the Earth (half its
/// circumference is 100 ms in fibre) or to a geostationary satellite (120 ms each way). Absurd
/// coordinates are refused by it instead of giving a delay of centuries.
pub const MAX_DISTANCE_DELAY: Duration = Duration::from_secs(60);

/// The delay between two positions, rounded to whole microseconds (finer is noise next to the
/// uncertainty of a city's coordinates); `None` if they are not in the same coordinates, and
/// `Some(Err(seconds))` if it would be above [`MAX_DISTANCE_DELAY`].
pub(crate) fn delay(a: Position, b: Position, speed: Speed) -> Option<Result<Duration, f64>> {
    let ns = match (a, b) {
        (Position::Earth { lat, lon }, Position::Earth { lat: l2, lon: o2 }) => {
            great_circle_km(lat, lon, l2, o2) / speed.km_per_s * 1e9
        }
        // With no delay per unit, even an infinite distance (inf × 0 would be NaN) costs none.
        (Position::Plane { .. }, Position::Plane { .. }) if speed.ns_per_unit == 0 => 0.0,
        (Position::Plane { x, y }, Position::Plane { x: x2, y: y2 }) => {
            (x - x2).hypot(y - y2) * speed.ns_per_unit as f64
        }
        _ => return None,
    };
    let us = (ns / 1000.0).round();
    // Also catches infinity (finite coordinates can be infinitely far apart: 1e308 and -1e308).
    if us.is_nan() || us > MAX_DISTANCE_DELAY.as_nanos() as f64 / 1000.0 {
        return Some(Err(ns / 1e9));
    }
    Some(Ok(Duration::from_micros(us as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIBRE: Speed = Speed {
        km_per_s: FIBRE_KM_PER_S,
        ns_per_unit: 5_000,
    };

    #[test]
    fn new_york_to_chicago_is_about_1150_km_and_5_7_ms() {
        // Coordinates as in the Zoo's Abilene.graphml.
        let (ny, chicago) = ((40.71427, -74.00597), (41.85003, -87.65005));
        let km = great_circle_km(ny.0, ny.1, chicago.0, chicago.1);
        assert!((km - 1144.0).abs() < 5.0, "{km}");
        let d = delay(
            Position::Earth {
                lat: ny.0,
                lon: ny.1,
            },
            Position::Earth {
                lat: chicago.0,
                lon: chicago.1,
            },
            FIBRE,
        )
        .unwrap()
        .unwrap();
        // km / 200 000 km/s, to the microsecond.
        assert_eq!(d, Duration::from_micros((km / 0.2).round() as u64));
    }

    #[test]
    fn antipodes_are_half_the_circumference_and_planes_use_the_unit_delay() {
        let km = great_circle_km(0.0, 0.0, 0.0, 180.0);
        assert!((km - std::f64::consts::PI * EARTH_RADIUS_KM).abs() < 1e-6);
        let p = |x, y| Position::Plane { x, y };
        assert_eq!(
            delay(p(0.0, 0.0), p(3.0, 4.0), FIBRE),
            Some(Ok(Duration::from_micros(25)))
        );
        let earth = Position::Earth { lat: 0.0, lon: 0.0 };
        assert_eq!(delay(earth, p(0.0, 0.0), FIBRE), None);
        // 1e300 units apart: refused with the delay it would be, not saturated to 584 years.
        let far = delay(p(0.0, 0.0), p(1e300, 0.0), FIBRE).unwrap();
        assert!(far.is_err_and(|s| s > 1e294));
        assert_eq!(
            delay(p(0.0, 0.0), p(12e6, 0.0), FIBRE),
            Some(Ok(MAX_DISTANCE_DELAY))
        );
        assert_eq!(delay(p(0.0, 0.0), p(2e7, 0.0), FIBRE), Some(Err(100.0)));
    }
}
