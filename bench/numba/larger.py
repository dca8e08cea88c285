"""Three larger njit objectives for compile-time measurements (bench/numba_first_call.py,
issue 29): written as a Numba user writes them (loops over arrays, helper njit
functions, NumPy allocations), each several times the size of the bench/numba workloads.

- ``solar``: a solar-position model in the style of NREL's SPA as pvlib ports it: per
  time stamp, Julian centuries, the Earth's heliocentric longitude, latitude and radius
  from periodic series (coefficient tables passed as arrays), nutation, aberration, the
  apparent sidereal time, the topocentric parallax correction and refraction; the
  objective is a weighted sum of the zenith angles. Differentiated w.r.t. the series'
  coefficients and the site's latitude.
- ``md``: a Lennard-Jones cluster with a harmonic trap, integrated by velocity Verlet
  (forces in a helper, minimum-image distances in another); the objective is the final
  kinetic plus potential energy. Differentiated w.r.t. the initial positions and the
  well depth.
- ``mlp``: a three-layer perceptron (tanh, tanh, softmax) with a cross-entropy loss, L2
  penalty and layer normalization, each layer a helper; differentiated w.r.t. the
  weights and biases.

Each module-level name follows bench/numba's workloads: ``objective``, ``ARGNUMS``,
``make_inputs`` (here ``WORKLOADS`` maps a name to its (objective, argnums, make_inputs)).
"""

from __future__ import annotations

import math

import numba
import numpy as np

# ---------------------------------------------------------------------------------------
# solar: SPA-style solar position over many time stamps
# ---------------------------------------------------------------------------------------


@numba.njit
def _series(terms, jme):
    """sum over rows of A cos(B + C jme) (one periodic series of the Earth's position)."""
    s = 0.0
    for r in range(terms.shape[0]):
        s += terms[r, 0] * math.cos(terms[r, 1] + terms[r, 2] * jme)
    return s


@numba.njit
def _polynomial_series(l0, l1, l2, l3, jme):
    """(L0 + L1 jme + L2 jme^2 + L3 jme^3) / 1e8, each Li a periodic series."""
    return (_series(l0, jme) + _series(l1, jme) * jme + _series(l2, jme) * jme * jme
            + _series(l3, jme) * jme * jme * jme) / 1e8


@numba.njit
def _limit_degrees(deg):
    d = deg / 360.0
    return 360.0 * (d - math.floor(d))


@numba.njit
def _nutation(jce):
    """Nutation in longitude and obliquity (degrees) from the five fundamental arguments,
    the leading terms of the IAU 1980 series."""
    x0 = 297.85036 + 445267.111480 * jce - 0.0019142 * jce * jce + jce ** 3 / 189474.0
    x1 = 357.52772 + 35999.050340 * jce - 0.0001603 * jce * jce - jce ** 3 / 300000.0
    x2 = 134.96298 + 477198.867398 * jce + 0.0086972 * jce * jce + jce ** 3 / 56250.0
    x3 = 93.27191 + 483202.017538 * jce - 0.0036825 * jce * jce + jce ** 3 / 327270.0
    x4 = 125.04452 - 1934.136261 * jce + 0.0020708 * jce * jce + jce ** 3 / 450000.0
    r = math.pi / 180.0
    dpsi = ((-171996.0 - 174.2 * jce) * math.sin(x4 * r) + (-13187.0 - 1.6 * jce) * math.sin((-2 * x0 + 2 * x3 + 2 * x4) * r)
            + (-2274.0 - 0.2 * jce) * math.sin((2 * x3 + 2 * x4) * r) + (2062.0 + 0.2 * jce) * math.sin(2 * x4 * r)
            + (1426.0 - 3.4 * jce) * math.sin(x1 * r) + (712.0 + 0.1 * jce) * math.sin(x2 * r))
    deps = ((92025.0 + 8.9 * jce) * math.cos(x4 * r) + (5736.0 - 3.1 * jce) * math.cos((-2 * x0 + 2 * x3 + 2 * x4) * r)
            + (977.0 - 0.5 * jce) * math.cos((2 * x3 + 2 * x4) * r) + (-895.0 + 0.5 * jce) * math.cos(2 * x4 * r)
            + (54.0 - 0.1 * jce) * math.cos(x1 * r) - 7.0 * math.cos(x2 * r))
    return dpsi / 36000000.0, deps / 36000000.0


@numba.njit
def _refraction(e0, pressure, temp):
    """Atmospheric refraction correction (degrees) of a topocentric elevation e0."""
    if e0 < -0.83337:
        return 0.0
    return (pressure / 1010.0) * (283.0 / (273.0 + temp)) * 1.02 / (60.0 * math.tan(math.radians(e0 + 10.3 / (e0 + 5.11))))


@numba.njit
def solar_objective(l0, l1, l2, l3, b0, r0, r1, lat, elev, lon, times, weights):
    n = times.shape[0]
    zen = np.empty(n)
    for i in range(n):
        jd = times[i]
        jc = (jd - 2451545.0) / 36525.0
        jme = jc / 10.0
        jce = jc
        lon_h = _limit_degrees(math.degrees(_polynomial_series(l0, l1, l2, l3, jme)))
        lat_h = math.degrees(_series(b0, jme) / 1e8)
        rad = (_series(r0, jme) + _series(r1, jme) * jme) / 1e8
        theta = _limit_degrees(lon_h + 180.0)
        beta = -lat_h
        dpsi, deps = _nutation(jce)
        u = jme / 10.0
        eps0 = 84381.448 - 4680.93 * u - 1.55 * u * u + 1999.25 * u ** 3 - 51.38 * u ** 4
        eps = eps0 / 3600.0 + deps
        dtau = -20.4898 / (3600.0 * rad)
        lam = theta + dpsi + dtau
        nu0 = _limit_degrees(280.46061837 + 360.98564736629 * (jd - 2451545.0)
                             + 0.000387933 * jc * jc - jc ** 3 / 38710000.0)
        nu = nu0 + dpsi * math.cos(math.radians(eps))
        lr, er, br = math.radians(lam), math.radians(eps), math.radians(beta)
        alpha = _limit_degrees(math.degrees(math.atan2(math.sin(lr) * math.cos(er) - math.tan(br) * math.sin(er),
                                                       math.cos(lr))))
        delta = math.degrees(math.asin(math.sin(br) * math.cos(er) + math.cos(br) * math.sin(er) * math.sin(lr)))
        h = _limit_degrees(nu + lon - alpha)
        # topocentric parallax
        xi = 8.794 / (3600.0 * rad)
        uu = math.atan(0.99664719 * math.tan(math.radians(lat)))
        x = math.cos(uu) + elev / 6378140.0 * math.cos(math.radians(lat))
        y = 0.99664719 * math.sin(uu) + elev / 6378140.0 * math.sin(math.radians(lat))
        xr, hr, dr = math.radians(xi), math.radians(h), math.radians(delta)
        dalpha = math.atan2(-x * math.sin(xr) * math.sin(hr), math.cos(dr) - x * math.sin(xr) * math.cos(hr))
        delta_p = math.atan2((math.sin(dr) - y * math.sin(xr)) * math.cos(dalpha),
                             math.cos(dr) - x * math.sin(xr) * math.cos(hr))
        hp = hr - dalpha
        latr = math.radians(lat)
        e0 = math.degrees(math.asin(math.sin(latr) * math.sin(delta_p) + math.cos(latr) * math.cos(delta_p) * math.cos(hp)))
        e = e0 + _refraction(e0, 1013.25, 12.0)
        zen[i] = 90.0 - e
    s = 0.0
    for i in range(n):
        s += weights[i] * zen[i]
    return s


def solar_inputs(n: int = 24, seed: int = 3):
    rng = np.random.default_rng(seed)

    def table(rows, amp):
        t = np.empty((rows, 3))
        t[:, 0] = amp * rng.uniform(0.1, 1.0, rows)
        t[:, 1] = rng.uniform(0.0, 6.0, rows)
        t[:, 2] = rng.uniform(0.0, 1e3, rows)
        t[0, 1], t[0, 2] = 0.0, 0.0
        return t

    l0, l1, l2, l3 = table(16, 1e8), table(8, 6e8), table(6, 5e4), table(4, 200.0)
    l1[0, 0] = 628331966747.0  # the mean motion: longitude advances ~360 degrees a year
    b0, r0, r1 = table(5, 100.0), table(12, 1e8), table(6, 1e5)
    times = 2459000.5 + np.linspace(0.0, 1.0, n)
    return l0, l1, l2, l3, b0, r0, r1, 39.74, 1830.0, -105.18, times, rng.uniform(size=n)


# ---------------------------------------------------------------------------------------
# md: Lennard-Jones cluster, velocity Verlet
# ---------------------------------------------------------------------------------------


@numba.njit
def _min_image(d, box):
    return d - box * math.floor(d / box + 0.5)


@numba.njit
def _forces(pos, eps, sigma, box, k_trap, f):
    """Forces into f, potential energy returned: pairwise Lennard-Jones (minimum image,
    cut at 2.5 sigma, shifted) plus a harmonic trap to the box centre."""
    n = pos.shape[0]
    for i in range(n):
        for c in range(3):
            f[i, c] = 0.0
    rc2 = (2.5 * sigma) ** 2
    sr6c = (sigma * sigma / rc2) ** 3
    shift = 4.0 * eps * (sr6c * sr6c - sr6c)
    pot = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = _min_image(pos[i, 0] - pos[j, 0], box)
            dy = _min_image(pos[i, 1] - pos[j, 1], box)
            dz = _min_image(pos[i, 2] - pos[j, 2], box)
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < rc2:
                sr2 = sigma * sigma / r2
                sr6 = sr2 * sr2 * sr2
                pot += 4.0 * eps * (sr6 * sr6 - sr6) - shift
                fr = 24.0 * eps * (2.0 * sr6 * sr6 - sr6) / r2
                f[i, 0] += fr * dx
                f[i, 1] += fr * dy
                f[i, 2] += fr * dz
                f[j, 0] -= fr * dx
                f[j, 1] -= fr * dy
                f[j, 2] -= fr * dz
    centre = 0.5 * box
    for i in range(n):
        for c in range(3):
            d = pos[i, c] - centre
            pot += 0.5 * k_trap * d * d
            f[i, c] -= k_trap * d
    return pot


@numba.njit
def md_objective(pos0, vel0, eps, sigma, box, k_trap, dt, nsteps):
    n = pos0.shape[0]
    pos = pos0.copy()
    vel = vel0.copy()
    f = np.zeros((n, 3))
    pot = _forces(pos, eps, sigma, box, k_trap, f)
    for _ in range(nsteps):
        for i in range(n):
            for c in range(3):
                vel[i, c] += 0.5 * dt * f[i, c]
                pos[i, c] += dt * vel[i, c]
        pot = _forces(pos, eps, sigma, box, k_trap, f)
        for i in range(n):
            for c in range(3):
                vel[i, c] += 0.5 * dt * f[i, c]
    kin = 0.0
    for i in range(n):
        for c in range(3):
            kin += 0.5 * vel[i, c] * vel[i, c]
    return kin + pot


def md_inputs(n: int = 8, nsteps: int = 5, seed: int = 5):
    rng = np.random.default_rng(seed)
    side = int(math.ceil(n ** (1.0 / 3.0)))
    grid = np.array([(a, b, c) for a in range(side) for b in range(side) for c in range(side)][:n], dtype=np.float64)
    pos = 1.2 * grid + 2.0 + 0.05 * rng.normal(size=(n, 3))
    vel = 0.1 * rng.normal(size=(n, 3))
    return pos, vel, 1.0, 1.0, 1.2 * side + 4.0, 0.5, 0.002, nsteps


# ---------------------------------------------------------------------------------------
# mlp: three-layer perceptron, cross-entropy
# ---------------------------------------------------------------------------------------


@numba.njit
def _dense_tanh(w, b, x, out):
    for i in range(w.shape[0]):
        s = b[i]
        for j in range(w.shape[1]):
            s += w[i, j] * x[j]
        out[i] = math.tanh(s)


@numba.njit
def _layer_norm(v, gain):
    n = v.shape[0]
    mean = 0.0
    for i in range(n):
        mean += v[i]
    mean /= n
    var = 0.0
    for i in range(n):
        var += (v[i] - mean) ** 2
    var /= n
    inv = 1.0 / math.sqrt(var + 1e-5)
    for i in range(n):
        v[i] = gain[i] * (v[i] - mean) * inv


@numba.njit
def _log_softmax_at(z, label):
    m = z[0]
    for i in range(1, z.shape[0]):
        m = max(m, z[i])
    s = 0.0
    for i in range(z.shape[0]):
        s += math.exp(z[i] - m)
    return z[label] - m - math.log(s)


@numba.njit
def mlp_objective(w1, b1, w2, b2, w3, b3, gain, xs, labels, l2):
    h1 = np.empty(w1.shape[0])
    h2 = np.empty(w2.shape[0])
    z = np.empty(w3.shape[0])
    loss = 0.0
    for k in range(xs.shape[0]):
        _dense_tanh(w1, b1, xs[k], h1)
        _layer_norm(h1, gain)
        _dense_tanh(w2, b2, h1, h2)
        for i in range(w3.shape[0]):
            s = b3[i]
            for j in range(w3.shape[1]):
                s += w3[i, j] * h2[j]
            z[i] = s
        loss -= _log_softmax_at(z, labels[k])
    penalty = 0.0
    for w in (w1, w2, w3):
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                penalty += w[i, j] * w[i, j]
    return loss / xs.shape[0] + l2 * penalty


def mlp_inputs(d: int = 6, h: int = 8, c: int = 4, n: int = 5, seed: int = 7):
    rng = np.random.default_rng(seed)
    return (0.5 * rng.normal(size=(h, d)), 0.1 * rng.normal(size=h), 0.5 * rng.normal(size=(h, h)),
            0.1 * rng.normal(size=h), 0.5 * rng.normal(size=(c, h)), 0.1 * rng.normal(size=c),
            1.0 + 0.1 * rng.normal(size=h), rng.normal(size=(n, d)), rng.integers(0, c, size=n), 1e-3)


#: name -> (objective, argnums, make_inputs)
WORKLOADS = {
    "solar": (solar_objective, (0, 1, 4, 7), solar_inputs),
    "md": (md_objective, (0, 2), md_inputs),
    "mlp": (mlp_objective, (0, 1, 2, 3, 4, 5, 6), mlp_inputs),
}
