import { useState } from 'preact/hooks';

type Theme = 'system' | 'light' | 'dark';
const KEY = 'cinv-theme';
const NEXT: Record<Theme, Theme> = { system: 'light', light: 'dark', dark: 'system' };

function stored(): Theme {
  try {
    const value = localStorage.getItem(KEY);
    return value === 'light' || value === 'dark' ? value : 'system';
  } catch {
    return 'system';
  }
}

/** Sets the colour scheme on the document: `system` follows prefers-color-scheme (the stylesheet's media query). */
export function applyTheme(theme: Theme = stored()): void {
  if (theme === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

/** A button that cycles the colour scheme: the system's, light, dark; remembered in this browser. */
export function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(stored);
  const change = () => {
    const next = NEXT[theme];
    try {
      if (next === 'system') localStorage.removeItem(KEY);
      else localStorage.setItem(KEY, next);
    } catch {
      // storage refused (private mode): the choice lasts for this page
    }
    applyTheme(next);
    setTheme(next);
  };
  return (
    <button type="button" class="theme" onClick={change} title="Colour scheme: the system's, light or dark">
      Theme: {theme === 'system' ? 'system' : theme}
    </button>
  );
}
