"""Frame-level acoustic features in plain numpy, for the VAD and the diarizer.

All features use the same framing as pocketsphinx: one frame every 10 ms (hop 160
samples at 16 kHz), so frame ``i`` starts at ``i * 0.01`` s. Analysis windows are
25 ms (Hamming) for the spectrum and 40 ms for pitch. Work is done in chunks of
~20 s so memory stays bounded for hour-long sessions (the full STFT of an hour
would be gigabytes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAMPLE_RATE = 16_000
HOP = 160  # 10 ms
WIN = 400  # 25 ms
N_FFT = 512
N_MELS = 40
N_MFCC = 20
_PITCH_WIN = 640  # 40 ms: at least two periods of a 60 Hz voice
_PITCH_FFT = 1024
_F0_MIN, _F0_MAX = 60.0, 400.0  # Hz: the range of adult and child speaking voices
_CHUNK_FRAMES = 2000  # 20 s per chunk


@dataclass(frozen=True)
class Frames:
    """Per-frame features of a signal; row ``i`` describes the 10 ms frame starting at ``i * 0.01`` s.

    ``energy_db``: (n,) frame log energy in dB relative to full scale (floored at -120).
    ``mfcc``: (n, 20) cepstra c0..c19 of a 40-band log-mel spectrum (20 Hz - 7.6 kHz).
    ``f0_hz``: (n,) fundamental frequency in Hz, 0 where the frame is not voiced.
    ``voicing``: (n,) peak normalised autocorrelation (0..1), how periodic the frame is.
    """

    energy_db: np.ndarray
    mfcc: np.ndarray
    f0_hz: np.ndarray
    voicing: np.ndarray

    @property
    def n(self) -> int:
        return int(self.energy_db.shape[0])


def n_frames(n_samples: int) -> int:
    """Number of 10 ms frames for ``n_samples`` samples (the last partial frame is padded)."""
    return max(1, -(-n_samples // HOP))


def _mel_filterbank() -> np.ndarray:
    """(N_FFT//2+1, N_MELS) triangular filters on the HTK mel scale."""

    def mel(f: np.ndarray) -> np.ndarray:
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def hz(m: np.ndarray) -> np.ndarray:
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)

    edges = hz(np.linspace(mel(np.array(20.0)), mel(np.array(7600.0)), N_MELS + 2))
    bins = np.fft.rfftfreq(N_FFT, 1.0 / SAMPLE_RATE)
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    up = (bins[None, :] - lo) / (mid - lo)
    down = (hi - bins[None, :]) / (hi - mid)
    return np.maximum(0.0, np.minimum(up, down)).T.astype(np.float32)


def _dct_matrix() -> np.ndarray:
    """(N_MELS, N_MFCC) orthonormal DCT-II basis."""
    k = np.arange(N_MFCC)[None, :]
    m = np.arange(N_MELS)[:, None]
    basis = np.cos(np.pi * k * (2 * m + 1) / (2 * N_MELS)) * np.sqrt(2.0 / N_MELS)
    basis[:, 0] /= np.sqrt(2.0)
    return basis.astype(np.float32)


_MEL = _mel_filterbank()
_DCT = _dct_matrix()
_HAMMING = np.hamming(WIN).astype(np.float32)
_HANN_PITCH = np.hanning(_PITCH_WIN).astype(np.float32)
# Autocorrelation of the analysis window itself, to undo its taper (Boersma 1993).
_WIN_AC = np.fft.irfft(np.abs(np.fft.rfft(_HANN_PITCH, _PITCH_FFT)) ** 2)[: _PITCH_WIN // 2 + 1]
_LAG_MIN = int(SAMPLE_RATE / _F0_MAX)
_LAG_MAX = int(SAMPLE_RATE / _F0_MIN)


def _frames_of(x: np.ndarray, start: int, count: int, width: int) -> np.ndarray:
    """(count, width) matrix of frames of ``x`` centred on ``start + i*HOP + HOP/2``, zero padded."""
    first = start * HOP + HOP // 2 - width // 2
    lo, hi = first, first + (count - 1) * HOP + width
    seg = np.zeros(hi - lo, dtype=np.float32)
    a, b = max(lo, 0), min(hi, x.size)
    if b > a:
        seg[a - lo : b - lo] = x[a:b]
    return np.lib.stride_tricks.sliding_window_view(seg, width)[::HOP][:count]


def compute(x: np.ndarray) -> Frames:
    """Compute `Frames` for ``x``: float32 mono samples at 16 kHz, shape (n_samples,)."""
    total = n_frames(x.size)
    energy = np.empty(total, dtype=np.float32)
    mfcc = np.empty((total, N_MFCC), dtype=np.float32)
    f0 = np.zeros(total, dtype=np.float32)
    voicing = np.zeros(total, dtype=np.float32)
    for start in range(0, total, _CHUNK_FRAMES):
        count = min(_CHUNK_FRAMES, total - start)
        fr = _frames_of(x, start, count, WIN)
        power = np.mean(fr.astype(np.float64) ** 2, axis=1)
        energy[start : start + count] = 10.0 * np.log10(np.maximum(power, 1e-12))
        spec = np.abs(np.fft.rfft(fr * _HAMMING, N_FFT)) ** 2
        logmel = np.log(spec.astype(np.float32) @ _MEL + 1e-8)
        mfcc[start : start + count] = logmel @ _DCT
        f0[start : start + count], voicing[start : start + count] = _pitch(_frames_of(x, start, count, _PITCH_WIN))
    return Frames(energy_db=energy, mfcc=mfcc, f0_hz=f0, voicing=voicing)


def _pitch(fr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F0 (Hz, 0 if unvoiced) and voicing strength per frame by normalised autocorrelation.

    The autocorrelation is divided by the window's own autocorrelation so that the
    peak at the true period is not penalised by the taper; a frame is voiced when the
    best peak in 60-400 Hz exceeds 0.45 (Boersma's default voicing threshold).
    """
    fr = fr - fr.mean(axis=1, keepdims=True)
    spec = np.fft.rfft(fr * _HANN_PITCH, _PITCH_FFT)
    ac = np.fft.irfft(np.abs(spec) ** 2, _PITCH_FFT)[:, : _LAG_MAX + 2]
    energy = ac[:, :1]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = ac / np.maximum(energy, 1e-12) / (_WIN_AC[None, : _LAG_MAX + 2] / _WIN_AC[0])
    band = r[:, _LAG_MIN : _LAG_MAX + 1]
    best = np.argmax(band, axis=1)
    peak = band[np.arange(band.shape[0]), best]
    lag = (best + _LAG_MIN).astype(np.float64)
    # Parabolic interpolation around the peak for sub-sample lag precision.
    i = np.clip(best, 1, band.shape[1] - 2)
    rows = np.arange(band.shape[0])
    y0, y1, y2 = band[rows, i - 1], band[rows, i], band[rows, i + 1]
    denom = y0 - 2 * y1 + y2
    shift = np.where(np.abs(denom) > 1e-9, 0.5 * (y0 - y2) / np.where(denom == 0, 1, denom), 0.0)
    lag = np.where((best > 0) & (best < band.shape[1] - 1), i + _LAG_MIN + np.clip(shift, -1, 1), lag)
    voiced = (peak > 0.45) & (energy[:, 0] > 1e-7 * _PITCH_FFT)
    f0 = np.where(voiced, SAMPLE_RATE / lag, 0.0)
    return f0.astype(np.float32), np.clip(np.nan_to_num(peak), 0, 1).astype(np.float32)
