import { passesLuhn } from '@tokenvault/contracts';

/** A Luhn-valid card number of this run only (Redis is shared by every test file). */
export function uniqueCardNumber(): string {
  const body = `4${String(Date.now()).slice(-9)}${String(Math.floor(Math.random() * 1e5)).padStart(5, '0')}`;
  const checkDigit = [...'0123456789'].find((digit) => passesLuhn(body + digit));
  return body + checkDigit!;
}
