// Word lists the benchmark dataset draws names from: people, companies, Applications, Groups, mail domains.

export const firstNames: readonly string[] = [
  'Ada', 'Alan', 'Amara', 'Anders', 'Aiko', 'Beatriz', 'Bjorn', 'Camille', 'Carlos', 'Chen', 'Chiara', 'Dara',
  'David', 'Dmitri', 'Elena', 'Emeka', 'Emma', 'Farah', 'Felix', 'Fatima', 'Grace', 'Gustavo', 'Hana', 'Hector',
  'Ingrid', 'Isaac', 'Jamal', 'Jane', 'Joao', 'Kai', 'Kamala', 'Kenji', 'Lars', 'Leila', 'Liam', 'Lucia',
  'Maya', 'Mateo', 'Mei', 'Nadia', 'Niamh', 'Noah', 'Olga', 'Omar', 'Oscar', 'Priya', 'Pablo', 'Quentin',
  'Rafael', 'Rosa', 'Ravi', 'Sakura', 'Samir', 'Sofia', 'Tariq', 'Tomas', 'Uma', 'Valentina', 'Viktor', 'Wei',
  'Xavier', 'Yara', 'Yusuf', 'Zainab', 'Zoe',
];

export const lastNames: readonly string[] = [
  'Abbott', 'Achebe', 'Alvarez', 'Andersen', 'Bauer', 'Becker', 'Bianchi', 'Brown', 'Campbell', 'Castillo',
  'Chowdhury', 'Costa', 'Dubois', 'Dunn', 'Eriksson', 'Esposito', 'Fernandes', 'Fischer', 'Fujita', 'Garcia',
  'Gonzalez', 'Gupta', 'Haddad', 'Hansen', 'Hernandez', 'Hoffmann', 'Ivanova', 'Jensen', 'Johansson', 'Kaur',
  'Kim', 'Kowalski', 'Kruger', 'Larsen', 'Lefebvre', 'Lindqvist', 'Lopez', 'Mahmoud', 'Martin', 'Meyer',
  'Mendes', 'Moreau', 'Murphy', 'Nakamura', 'Nguyen', 'Novak', 'Okafor', 'Olsen', 'Ortiz', 'Park', 'Patel',
  'Pereira', 'Petrov', 'Quinn', 'Ramirez', 'Rossi', 'Sanchez', 'Santos', 'Schmidt', 'Shah', 'Silva', 'Singh',
  'Sorensen', 'Suzuki', 'Tanaka', 'Torres', 'Umarov', 'Varga', 'Vasquez', 'Wagner', 'Walsh', 'Weber', 'Wong',
  'Xu', 'Yamamoto', 'Yilmaz', 'Zhang', 'Zielinski',
];

export const companyPrefixes: readonly string[] = [
  'Acme', 'Apex', 'Argent', 'Aurora', 'Basalt', 'Beacon', 'Birch', 'Bluefin', 'Boreal', 'Brightwater', 'Cascade',
  'Cedar', 'Cobalt', 'Condor', 'Copper', 'Crescent', 'Delta', 'Driftwood', 'Ember', 'Evergreen', 'Falcon',
  'Fjord', 'Foxglove', 'Garnet', 'Glacier', 'Granite', 'Harbor', 'Helix', 'Horizon', 'Indigo', 'Iron', 'Juniper',
  'Kestrel', 'Lantern', 'Larch', 'Lumen', 'Maple', 'Meridian', 'Monarch', 'Nimbus', 'Northwind', 'Oakridge',
  'Obsidian', 'Onyx', 'Orchid', 'Pinnacle', 'Quartz', 'Quillon', 'Raven', 'Redwood', 'Sable', 'Saffron',
  'Sequoia', 'Sierra', 'Solstice', 'Summit', 'Tamarack', 'Tidewater', 'Topaz', 'Umber', 'Vantage', 'Vertex',
  'Willow', 'Wyvern', 'Yarrow', 'Zephyr', 'Zenith',
];

export const companyCores: readonly string[] = [
  'Analytics', 'Bakery', 'Biotech', 'Builders', 'Capital', 'Cloud', 'Consulting', 'Dynamics', 'Energy',
  'Engineering', 'Foods', 'Freight', 'Games', 'Health', 'Insurance', 'Labs', 'Logistics', 'Media', 'Motors',
  'Networks', 'Outfitters', 'Pharma', 'Robotics', 'Software', 'Studios', 'Systems', 'Textiles', 'Travel',
  'Ventures', 'Works',
];

export const companySuffixes: readonly string[] = ['', '', '', ' Inc', ' Ltd', ' GmbH', ' LLC', ' SA', ' BV', ' AB'];

export const applicationNames: readonly string[] = [
  'Customer Portal', 'Billing', 'Mobile App', 'Partner Hub', 'Support Desk', 'Analytics Console', 'Shop',
  'Learning Center', 'Developer API', 'Field Service', 'HR Self Service', 'Marketing Studio', 'Inventory',
  'Bookings', 'Community Forum', 'Payments Gateway', 'Data Export', 'Admin Console', 'Survey Tool', 'Chat',
  'Loyalty Rewards', 'Fleet Tracker', 'Docs Wiki', 'Status Page', 'Telehealth', 'Ticketing', 'Recruiting',
  'Expense Reports', 'Time Tracking', 'Asset Manager', 'Kiosk', 'Smart Home', 'Streaming', 'News Reader',
  'Fitness Coach', 'Travel Planner', 'Classroom', 'Event Check-in', 'Wallet', 'Maps',
];

export const groupNames: readonly string[] = [
  'admins', 'editors', 'viewers', 'support', 'billing', 'beta-testers', 'free', 'pro', 'enterprise', 'partners',
  'auditors', 'developers',
];

export const mailDomains: readonly string[] = [
  'mail.example', 'inbox.example', 'post.example', 'webmail.example', 'letters.example', 'fastmail.example',
];

export const plans: readonly string[] = ['free', 'free', 'free', 'pro', 'pro', 'enterprise'];
export const signupSources: readonly string[] = ['web', 'ios', 'android', 'import', 'partner'];
export const locales: readonly string[] = ['en-US', 'en-GB', 'de-DE', 'fr-FR', 'es-ES', 'pt-BR', 'ja-JP', 'hi-IN'];
