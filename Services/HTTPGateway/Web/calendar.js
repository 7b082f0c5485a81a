// The month as `lht calendar --svg` draws it (SEMANTICS §6): per day an inner NoAlc fill (28 pt),
// a workout ring (32 pt) and a mindfulness ring (42 pt), each where the day has any, Monday first.

import { monthDays, weekdayIndex } from "./days.js";

export const levelColors = { steady: "#0EBF6E", easy: "#89D6B2", wild: "#B6B6B6" };
export const workoutColor = "#FF8A3D";
export const mindfulnessColor = "#7A6FF0";

const cell = 56, margin = 20, top = 76;

export function escapeXML(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

/**
 * The SVG text of `month` (YYYY-MM). `days` maps a day to {level, color, mindfulnessMinutes, workoutMinutes}
 * (calendar.get's colour wins; the level's own colour where it gave none); `labels` holds the title,
 * the seven weekday names and the legend's five labels.
 */
export function calendarSVG(month, days, labels, today) {
  const all = monthDays(month);
  const leading = weekdayIndex(all[0]);
  const rows = Math.ceil((leading + all.length) / 7);
  const width = margin * 2 + cell * 7, height = top + cell * rows + 44;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="calendar-svg-title" font-family="-apple-system, Helvetica, Arial, sans-serif">`,
    `<title id="calendar-svg-title">${escapeXML(labels.title)}</title>`,
    `<rect width="100%" height="100%" fill="#FFFFFF"/>`,
    `<text x="${margin}" y="32" font-size="18" font-weight="600" fill="#1D1D1F">${escapeXML(labels.title)}</text>`,
  ];
  labels.weekdays.forEach((name, index) => {
    parts.push(`<text x="${margin + cell * (index + 0.5)}" y="60" font-size="11" text-anchor="middle" fill="#6E6E73">${escapeXML(name)}</text>`);
  });
  all.forEach((day, offset) => {
    const slot = leading + offset;
    const cx = margin + cell * ((slot % 7) + 0.5), cy = top + cell * (Math.floor(slot / 7) + 0.5);
    const info = days.get(day) ?? {};
    const marks = [];
    // Rings 2 pt wide, outer edge at the diameter: the fill (r 14) and the rings never overlap.
    if (info.mindfulnessMinutes > 0) {
      marks.push(`<circle class="mindfulness" cx="${cx}" cy="${cy}" r="20" fill="none" stroke="${mindfulnessColor}" stroke-width="2"><title>${info.mindfulnessMinutes} min ${escapeXML(labels.legend[4])}</title></circle>`);
    }
    if (info.workoutMinutes > 0) {
      marks.push(`<circle class="workout" cx="${cx}" cy="${cy}" r="15" fill="none" stroke="${workoutColor}" stroke-width="2"><title>${info.workoutMinutes} min ${escapeXML(labels.legend[3])}</title></circle>`);
    }
    const color = info.color ?? levelColors[info.level];
    if (info.level && color) {
      marks.push(`<circle class="noalc ${escapeXML(info.level)}" cx="${cx}" cy="${cy}" r="14" fill="${escapeXML(color)}"><title>${escapeXML(info.level)}</title></circle>`);
    }
    const weight = day === today ? ` font-weight="700" text-decoration="underline"` : "";
    parts.push(`<g id="day-${day}">${marks.join("")}<text x="${cx}" y="${cy + 4}" font-size="11" text-anchor="middle" fill="#1D1D1F"${weight}>${Number(day.slice(8))}</text></g>`);
  });
  const legendY = top + cell * rows + 24;
  const legendColors = [levelColors.steady, levelColors.easy, levelColors.wild, workoutColor, mindfulnessColor];
  let x = margin;
  labels.legend.forEach((label, index) => {
    const ring = index >= 3;
    const paint = ring ? `fill="none" stroke="${legendColors[index]}" stroke-width="2"` : `fill="${legendColors[index]}"`;
    parts.push(`<circle cx="${x + 6}" cy="${legendY - 4}" r="6" ${paint}/>`);
    parts.push(`<text x="${x + 16}" y="${legendY}" font-size="11" fill="#1D1D1F">${escapeXML(label)}</text>`);
    x += 16 + label.length * 6.5 + 14;
  });
  parts.push("</svg>");
  return parts.join("\n");
}
